package cmgen

// The CM messages, as IBTA Vol 1 chapter 12 lays them out, in the order of
// their attribute IDs. Each field is given as its first octet, its first bit
// in that octet (0 the most significant), its width in bits, how Fields shows
// it, then its Go name, its IBTA name and its JSON key. Bits no field claims
// are reserved: the decoder ignores them and the encoder writes zeros.
//
// Bits are counted within an octet as Linux's ib_cm counts them in
// ibta_vol1_c12.h (the LAP's Alternate Packet Rate is octet 61, bit 2, 6 bits
// there too), so its definitions can be compared line by line.
var Messages = []Message{
	{
		Type: "CMReq", Name: "REQ", Article: "a", File: "cm_req.go", Attr: "AttrREQ", Layer: "LayerTypeCMReq",
		Fixed: 140, Local: "LocalCommID", IPCM: "ServiceID",
		Doc: `CMReq is the Communication Manager REQ message (IBTA Vol 1, 12.6.5, table
106): an active side asks to connect. When the Service ID carries the IP CM
prefix (rdma_cm on IP addresses), the private data starts with the 36-octet
IP CM header. Each path is a CMPath; the SAP Supported bit lives in the last
octet of the alternate path.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(8, 0, 64, ID64, "ServiceID", "Service ID", "service_id").note("ServiceIDNote"),
			field(16, 0, 64, ID64, "LocalCAGUID", "Local CA GUID", "local_ca_guid"),
			field(28, 0, 32, Hex, "LocalQKey", "Local Q_Key", "local_q_key"),
			field(32, 0, 24, Hex, "LocalQPN", "Local QPN", "local_qpn"),
			field(35, 0, 8, Dec, "ResponderResources", "Responder Resources", "responder_resources"),
			field(36, 0, 24, Hex, "LocalEECN", "Local EECN", "local_eecn"),
			field(39, 0, 8, Dec, "InitiatorDepth", "Initiator Depth", "initiator_depth"),
			field(40, 0, 24, Hex, "RemoteEECN", "Remote EECN", "remote_eecn"),
			field(43, 0, 5, Dec, "RemoteCMResponseTimeout", "Remote CM Response Timeout", "remote_cm_response_timeout"),
			field(43, 5, 2, Dec, "TransportServiceType", "Transport Service Type", "transport_service_type").doc("0 RC, 1 UC, 2 RD"),
			field(43, 7, 1, Flag, "EndToEndFlowControl", "End-to-End Flow Control", "end_to_end_flow_control"),
			field(44, 0, 24, Dec, "StartingPSN", "Starting PSN", "starting_psn"),
			field(47, 0, 5, Dec, "LocalCMResponseTimeout", "Local CM Response Timeout", "local_cm_response_timeout"),
			field(47, 5, 3, Dec, "RetryCount", "Retry Count", "retry_count"),
			field(48, 0, 16, Hex, "PartitionKey", "Partition Key", "partition_key"),
			field(50, 0, 4, Dec, "PathPacketPayloadMTU", "Path Packet Payload MTU", "path_mtu"),
			field(50, 4, 1, Flag, "RDCExists", "RDC Exists", "rdc_exists"),
			field(50, 5, 3, Dec, "RNRRetryCount", "RNR Retry Count", "rnr_retry_count"),
			field(51, 0, 4, Dec, "MaxCMRetries", "Max CM Retries", "max_cm_retries"),
			field(51, 4, 1, Flag, "SRQ", "SRQ", "srq"),
			field(51, 5, 3, Dec, "ExtendedTransportType", "Extended Transport Type", "extended_transport_type"),
			octets(52, 44, Path, "Primary", "Primary", "primary"),
			octets(96, 44, Path, "Alternate", "Alternate", "alternate"),
			field(139, 5, 1, Flag, "SAPSupported", "SAP Supported", "sap_supported"),
		},
	},
	{
		Type: "CMMra", Name: "MRA", Article: "an", File: "cm_mra.go", Attr: "AttrMRA", Layer: "LayerTypeCMMra",
		Fixed: 10, Local: "LocalCommID", Remote: "RemoteCommID",
		Doc: `CMMra is the Communication Manager MRA message (IBTA Vol 1, 12.6.6, table
107): Message Receipt Acknowledgement, asking the peer to wait longer.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(4, 0, 32, Hex, "RemoteCommID", "Remote Communication ID", "remote_comm_id"),
			field(8, 0, 2, Dec, "MessageMRAed", "Message MRAed", "message_mraed").doc("0 REQ, 1 REP, 2 LAP"),
			field(9, 0, 5, Dec, "ServiceTimeout", "Service Timeout", "service_timeout"),
		},
	},
	{
		Type: "CMRej", Name: "REJ", Article: "a", File: "cm_rej.go", Attr: "AttrREJ", Layer: "LayerTypeCMRej",
		Fixed: 84, Local: "LocalCommID", Remote: "RemoteCommID",
		Doc: `CMRej is the Communication Manager REJ message (IBTA Vol 1, 12.6.7, table
108): a REQ, REP or LAP is refused. Fields shows as much of the Additional
Reject Information as the Reject Info Length says.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(4, 0, 32, Hex, "RemoteCommID", "Remote Communication ID", "remote_comm_id"),
			field(8, 0, 2, Dec, "MessageRejected", "Message REJected", "message_rejected").doc("0 REQ, 1 REP, 2 other"),
			field(9, 0, 7, Dec, "RejectInfoLength", "Reject Info Length", "reject_info_length"),
			field(10, 0, 16, Dec, "Reason", "Reason", "reason").note("RejectReasonName"),
			octets(12, 72, Blob, "ARI", "Additional Reject Information", "ari").count("RejectInfoLength"),
		},
	},
	{
		Type: "CMRep", Name: "REP", Article: "a", File: "cm_rep.go", Attr: "AttrREP", Layer: "LayerTypeCMRep",
		Fixed: 36, Local: "LocalCommID", Remote: "RemoteCommID",
		Doc: `CMRep is the Communication Manager REP message (IBTA Vol 1, 12.6.8, table
110): the passive side accepts a REQ.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(4, 0, 32, Hex, "RemoteCommID", "Remote Communication ID", "remote_comm_id").doc("the REQ's Local Communication ID"),
			field(8, 0, 32, Hex, "LocalQKey", "Local Q_Key", "local_q_key"),
			field(12, 0, 24, Hex, "LocalQPN", "Local QPN", "local_qpn"),
			field(16, 0, 24, Hex, "LocalEECN", "Local EE Context Number", "local_eecn"),
			field(20, 0, 24, Dec, "StartingPSN", "Starting PSN", "starting_psn"),
			field(24, 0, 8, Dec, "ResponderResources", "Responder Resources", "responder_resources"),
			field(25, 0, 8, Dec, "InitiatorDepth", "Initiator Depth", "initiator_depth"),
			field(26, 0, 5, Dec, "TargetACKDelay", "Target ACK Delay", "target_ack_delay"),
			field(26, 5, 2, Dec, "FailoverAccepted", "Failover Accepted", "failover_accepted"),
			field(26, 7, 1, Flag, "EndToEndFlowControl", "End-to-End Flow Control", "end_to_end_flow_control"),
			field(27, 0, 3, Dec, "RNRRetryCount", "RNR Retry Count", "rnr_retry_count"),
			field(27, 3, 1, Flag, "SRQ", "SRQ", "srq"),
			field(28, 0, 64, ID64, "LocalCAGUID", "Local CA GUID", "local_ca_guid"),
		},
	},
	{
		Type: "CMRtu", Name: "RTU", Article: "an", File: "cm_rtu.go", Attr: "AttrRTU", Layer: "LayerTypeCMRtu",
		Fixed: 8, Local: "LocalCommID", Remote: "RemoteCommID",
		Doc: `CMRtu is the Communication Manager RTU message (IBTA Vol 1, 12.6.9, table
111): Ready To Use, the active side's answer to a REP.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(4, 0, 32, Hex, "RemoteCommID", "Remote Communication ID", "remote_comm_id"),
		},
	},
	{
		Type: "CMDreq", Name: "DREQ", Article: "a", File: "cm_dreq.go", Attr: "AttrDREQ", Layer: "LayerTypeCMDreq",
		Fixed: 12, Local: "LocalCommID", Remote: "RemoteCommID",
		Doc: `CMDreq is the Communication Manager DREQ message (IBTA Vol 1, 12.6.10,
table 112): Disconnection REQuest.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(4, 0, 32, Hex, "RemoteCommID", "Remote Communication ID", "remote_comm_id"),
			field(8, 0, 24, Hex, "RemoteQPNEECN", "Remote QPN/EECN", "remote_qpn"),
		},
	},
	{
		Type: "CMDrep", Name: "DREP", Article: "a", File: "cm_drep.go", Attr: "AttrDREP", Layer: "LayerTypeCMDrep",
		Fixed: 8, Local: "LocalCommID", Remote: "RemoteCommID",
		Doc: `CMDrep is the Communication Manager DREP message (IBTA Vol 1, 12.6.11,
table 113): Disconnection REPly.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(4, 0, 32, Hex, "RemoteCommID", "Remote Communication ID", "remote_comm_id"),
		},
	},
	{
		Type: "CMSidrReq", Name: "SIDR_REQ", Article: "a", File: "cm_sidr.go", Attr: "AttrSIDRREQ", Layer: "LayerTypeCMSidrReq",
		Fixed: 16, Local: "RequestID", IPCM: "ServiceID",
		Doc: `CMSidrReq is the Communication Manager SIDR_REQ message (IBTA Vol 1,
12.11.1, table 119): Service ID Resolution Request, for UD services. Like a
REQ, its private data starts with the IP CM header when the Service ID
carries the IP CM prefix.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "RequestID", "Request ID", "request_id"),
			field(4, 0, 16, Hex, "PartitionKey", "Partition Key", "partition_key"),
			field(8, 0, 64, ID64, "ServiceID", "Service ID", "service_id").note("ServiceIDNote"),
		},
	},
	{
		Type: "CMSidrRep", Name: "SIDR_REP", Article: "a", File: "cm_sidr.go", Attr: "AttrSIDRREP", Layer: "LayerTypeCMSidrRep",
		Fixed: 96, Local: "RequestID",
		Doc: `CMSidrRep is the Communication Manager SIDR_REP message (IBTA Vol 1,
12.11.2, table 120): Service ID Resolution Response. The offsets follow
the IBTA table (and Linux's ib_cm): QPN at 8, Service ID at 12, Q_Key at 20.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "RequestID", "Request ID", "request_id"),
			field(4, 0, 8, Dec, "Status", "Status", "status").doc("0 valid, 1 service ID not supported, 2 rejected, 3 no QP, 4 redirect, 5 unsupported version"),
			field(5, 0, 8, Dec, "AddInfoLength", "Additional Information Length", "add_info_length"),
			field(8, 0, 24, Hex, "QPN", "QPN", "qpn"),
			field(12, 0, 64, ID64, "ServiceID", "Service ID", "service_id").note("ServiceIDNote"),
			field(20, 0, 32, Hex, "QKey", "Q_Key", "q_key"),
			octets(24, 72, Blob, "AdditionalInfo", "Additional Information", "additional_info").count("AddInfoLength").doc("ClassPortInfo on redirect"),
		},
	},
	{
		Type: "CMLap", Name: "LAP", Article: "a", File: "cm_lap.go", Attr: "AttrLAP", Layer: "LayerTypeCMLap",
		Fixed: 64, Local: "LocalCommID", Remote: "RemoteCommID",
		Doc: `CMLap is the Communication Manager LAP message (IBTA Vol 1, 12.8.1, table
115): Load Alternate Path. The new alternate path is laid out differently
from a REQ's CMPath.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(4, 0, 32, Hex, "RemoteCommID", "Remote Communication ID", "remote_comm_id"),
			field(12, 0, 24, Hex, "RemoteQPNEECN", "Remote QPN/EECN", "remote_qpn"),
			field(15, 0, 5, Dec, "RemoteCMResponseTimeout", "Remote CM Response Timeout", "remote_cm_response_timeout"),
			field(20, 0, 16, Hex, "AltLocalPortLID", "Alternate Local Port LID", "alternate_local_lid"),
			field(22, 0, 16, Hex, "AltRemotePortLID", "Alternate Remote Port LID", "alternate_remote_lid"),
			octets(24, 16, GID, "AltLocalPortGID", "Alternate Local Port GID", "alternate_local_gid"),
			octets(40, 16, GID, "AltRemotePortGID", "Alternate Remote Port GID", "alternate_remote_gid"),
			field(56, 0, 20, Hex, "AltFlowLabel", "Alternate Flow Label", "alternate_flow_label"),
			field(59, 0, 8, Hex, "AltTrafficClass", "Alternate Traffic Class", "alternate_traffic_class"),
			field(60, 0, 8, Dec, "AltHopLimit", "Alternate Hop Limit", "alternate_hop_limit"),
			field(61, 2, 6, Dec, "AltPacketRate", "Alternate Packet Rate", "alternate_packet_rate"),
			field(62, 0, 4, Dec, "AltSL", "Alternate SL", "alternate_sl"),
			field(62, 4, 1, Flag, "AltSubnetLocal", "Alternate Subnet Local", "alternate_subnet_local"),
			field(63, 0, 5, Dec, "AltLocalACKTimeout", "Alternate Local ACK Timeout", "alternate_local_ack_timeout"),
		},
	},
	{
		Type: "CMApr", Name: "APR", Article: "an", File: "cm_apr.go", Attr: "AttrAPR", Layer: "LayerTypeCMApr",
		Fixed: 84, Local: "LocalCommID", Remote: "RemoteCommID",
		Doc: `CMApr is the Communication Manager APR message (IBTA Vol 1, 12.8.2, table
116): Alternate Path Response, the answer to a LAP.`,
		Fields: []Field{
			field(0, 0, 32, Hex, "LocalCommID", "Local Communication ID", "local_comm_id"),
			field(4, 0, 32, Hex, "RemoteCommID", "Remote Communication ID", "remote_comm_id"),
			field(8, 0, 8, Dec, "AddInfoLength", "Additional Information Length", "add_info_length"),
			field(9, 0, 8, Dec, "APStatus", "AP Status", "ap_status").doc("0 loaded, 1 invalid QPN/EECN, ..."),
			octets(12, 72, Blob, "AdditionalInfo", "Additional Information", "additional_info").count("AddInfoLength"),
		},
	},
}

// PathLayout is the path description a REQ carries twice, primary and
// alternate. Its fields' names and keys are shown after the path's: "Primary
// Local Port LID", "primary_local_lid".
var PathLayout = Message{
	Type: "CMPath", File: "cm_path.go", Fixed: 44,
	Doc: `CMPath is one path description inside a REQ, primary or alternate (IBTA
Vol 1, 12.6.5, table 106), 44 octets. Octets are counted from the start of
the path.`,
	Fields: []Field{
		field(0, 0, 16, Hex, "LocalPortLID", "Local Port LID", "local_lid"),
		field(2, 0, 16, Hex, "RemotePortLID", "Remote Port LID", "remote_lid"),
		octets(4, 16, GID, "LocalPortGID", "Local Port GID", "local_gid"),
		octets(20, 16, GID, "RemotePortGID", "Remote Port GID", "remote_gid"),
		field(36, 0, 20, Hex, "FlowLabel", "Flow Label", "flow_label"),
		field(39, 2, 6, Dec, "PacketRate", "Packet Rate", "packet_rate"),
		field(40, 0, 8, Hex, "TrafficClass", "Traffic Class", "traffic_class"),
		field(41, 0, 8, Dec, "HopLimit", "Hop Limit", "hop_limit"),
		field(42, 0, 4, Dec, "SL", "SL", "sl").doc("Service Level"),
		field(42, 4, 1, Flag, "SubnetLocal", "Subnet Local", "subnet_local"),
		field(43, 0, 5, Dec, "LocalACKTimeout", "Local ACK Timeout", "local_ack_timeout"),
	},
}
