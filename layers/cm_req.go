package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// CMReq is the Communication Manager REQ message (IBTA Vol 1, 12.6.5, table
// 106): an active side asks to connect. 140 octets of fixed fields, then 92
// octets of private data. When the Service ID carries the IP CM prefix
// (rdma_cm on IP addresses), the private data starts with the 36-octet IP CM
// header.
//
//	octet  0  Local Communication ID (4)      4  reserved (4)
//	       8  Service ID (8)                 16  Local CA GUID (8)
//	      24  reserved (4)                   28  Local Q_Key (4)
//	      32  Local QPN (3) | Responder Resources (1)
//	      36  Local EECN (3) | Initiator Depth (1)
//	      40  Remote EECN (3) | Remote CM Response Timeout:5 Transport Service Type:2 End-to-End Flow Control:1
//	      44  Starting PSN (3) | Local CM Response Timeout:5 Retry Count:3
//	      48  Partition Key (2) | Path MTU:4 RDC Exists:1 RNR Retry Count:3 | Max CM Retries:4 SRQ:1 Extended Transport Type:3
//	      52  primary path (44)              96  alternate path (44)
//	     140  Private Data (92)
type CMReq struct {
	cmBase
	LocalCommID             uint32 // Local Communication ID
	ServiceID               uint64 // Service ID
	LocalCAGUID             uint64 // Local CA GUID
	LocalQKey               uint32 // Local Q_Key
	LocalQPN                uint32 // Local QPN (24 bits)
	ResponderResources      uint8  // Responder Resources
	LocalEECN               uint32 // Local EECN (24 bits)
	InitiatorDepth          uint8  // Initiator Depth
	RemoteEECN              uint32 // Remote EECN (24 bits)
	RemoteCMResponseTimeout uint8  // Remote CM Response Timeout (5 bits)
	TransportServiceType    uint8  // Transport Service Type (2 bits): 0 RC, 1 UC, 2 RD
	EndToEndFlowControl     bool   // End-to-End Flow Control
	StartingPSN             uint32 // Starting PSN (24 bits)
	LocalCMResponseTimeout  uint8  // Local CM Response Timeout (5 bits)
	RetryCount              uint8  // Retry Count (3 bits)
	PartitionKey            uint16 // Partition Key
	PathPacketPayloadMTU    uint8  // Path Packet Payload MTU (4 bits)
	RDCExists               bool   // RDC Exists
	RNRRetryCount           uint8  // RNR Retry Count (3 bits)
	MaxCMRetries            uint8  // Max CM Retries (4 bits)
	SRQ                     bool   // SRQ
	ExtendedTransportType   uint8  // Extended Transport Type (3 bits)
	Primary                 CMPath // primary path
	Alternate               CMPath // alternate path
	SAPSupported            bool   // SAP Supported (in the alternate path's last octet)
}

func (m *CMReq) LayerType() gopacket.LayerType  { return LayerTypeCMReq }
func (m *CMReq) CanDecode() gopacket.LayerClass { return LayerTypeCMReq }
func (m *CMReq) AttributeID() uint16            { return AttrREQ }
func (m *CMReq) CommIDs() (uint32, uint32)      { return m.LocalCommID, 0 }
func (m *CMReq) PrivateDataOffset() int         { return 140 }
func (m *CMReq) PrivateDataSize() int           { return 92 }

// NextLayerType is the IP CM header when the Service ID carries the IP CM
// prefix, otherwise the RFC 8797 message if it starts the private data.
func (m *CMReq) NextLayerType() gopacket.LayerType {
	if IsIPCMServiceID(m.ServiceID) && len(m.PrivateData) > 0 {
		return LayerTypeIPCM
	}
	return m.next()
}

// DecodeFromBytes decodes a REQ from the 232-octet MAD data.
func (m *CMReq) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMReq{}
	if err := m.split("cm req", d, AttrREQ, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.ServiceID = binary.BigEndian.Uint64(d[8:16])
	m.LocalCAGUID = binary.BigEndian.Uint64(d[16:24])
	m.LocalQKey = binary.BigEndian.Uint32(d[28:32])
	m.LocalQPN = uint24(d[32:35])
	m.ResponderResources = d[35]
	m.LocalEECN = uint24(d[36:39])
	m.InitiatorDepth = d[39]
	m.RemoteEECN = uint24(d[40:43])
	m.RemoteCMResponseTimeout = d[43] >> 3
	m.TransportServiceType = d[43] >> 1 & 0x03
	m.EndToEndFlowControl = d[43]&0x01 != 0
	m.StartingPSN = uint24(d[44:47])
	m.LocalCMResponseTimeout = d[47] >> 3
	m.RetryCount = d[47] & 0x07
	m.PartitionKey = binary.BigEndian.Uint16(d[48:50])
	m.PathPacketPayloadMTU = d[50] >> 4
	m.RDCExists = d[50]&0x08 != 0
	m.RNRRetryCount = d[50] & 0x07
	m.MaxCMRetries = d[51] >> 4
	m.SRQ = d[51]&0x08 != 0
	m.ExtendedTransportType = d[51] & 0x07
	m.Primary.decode(d[52:96])
	m.Alternate.decode(d[96:140])
	m.SAPSupported = d[139]&0x04 != 0
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of a REQ.
func (m *CMReq) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrREQ, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint64(d[8:16], m.ServiceID)
		binary.BigEndian.PutUint64(d[16:24], m.LocalCAGUID)
		binary.BigEndian.PutUint32(d[28:32], m.LocalQKey)
		putUint24(d[32:35], m.LocalQPN)
		d[35] = m.ResponderResources
		putUint24(d[36:39], m.LocalEECN)
		d[39] = m.InitiatorDepth
		putUint24(d[40:43], m.RemoteEECN)
		d[43] = m.RemoteCMResponseTimeout<<3 | (m.TransportServiceType&0x03)<<1 | bit(m.EndToEndFlowControl, 0x01)
		putUint24(d[44:47], m.StartingPSN)
		d[47] = m.LocalCMResponseTimeout<<3 | m.RetryCount&0x07
		binary.BigEndian.PutUint16(d[48:50], m.PartitionKey)
		d[50] = m.PathPacketPayloadMTU<<4 | bit(m.RDCExists, 0x08) | m.RNRRetryCount&0x07
		d[51] = m.MaxCMRetries<<4 | bit(m.SRQ, 0x08) | m.ExtendedTransportType&0x07
		m.Primary.encode(d[52:96])
		d[139] = bit(m.SAPSupported, 0x04)
		m.Alternate.encode(d[96:140])
	})
}

// Fields lists the REQ's fields for display.
func (m *CMReq) Fields() []Field {
	f := make(fieldList, 0, 48)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.id64("Service ID", "service_id", m.ServiceID)
	f.note(ServiceIDNote(m.ServiceID))
	f.id64("Local CA GUID", "local_ca_guid", m.LocalCAGUID)
	f.hex("Local Q_Key", "local_q_key", 32, uint64(m.LocalQKey))
	f.hex("Local QPN", "local_qpn", 24, uint64(m.LocalQPN))
	f.dec("Responder Resources", "responder_resources", uint64(m.ResponderResources))
	f.hex("Local EECN", "local_eecn", 24, uint64(m.LocalEECN))
	f.dec("Initiator Depth", "initiator_depth", uint64(m.InitiatorDepth))
	f.hex("Remote EECN", "remote_eecn", 24, uint64(m.RemoteEECN))
	f.dec("Remote CM Response Timeout", "remote_cm_response_timeout", uint64(m.RemoteCMResponseTimeout))
	f.dec("Transport Service Type", "transport_service_type", uint64(m.TransportServiceType))
	f.flag("End-to-End Flow Control", "end_to_end_flow_control", m.EndToEndFlowControl)
	f.dec("Starting PSN", "starting_psn", uint64(m.StartingPSN))
	f.dec("Local CM Response Timeout", "local_cm_response_timeout", uint64(m.LocalCMResponseTimeout))
	f.dec("Retry Count", "retry_count", uint64(m.RetryCount))
	f.hex("Partition Key", "partition_key", 16, uint64(m.PartitionKey))
	f.dec("Path Packet Payload MTU", "path_mtu", uint64(m.PathPacketPayloadMTU))
	f.flag("RDC Exists", "rdc_exists", m.RDCExists)
	f.dec("RNR Retry Count", "rnr_retry_count", uint64(m.RNRRetryCount))
	f.dec("Max CM Retries", "max_cm_retries", uint64(m.MaxCMRetries))
	f.flag("SRQ", "srq", m.SRQ)
	f.dec("Extended Transport Type", "extended_transport_type", uint64(m.ExtendedTransportType))
	m.Primary.fields(&f, "Primary", "primary")
	m.Alternate.fields(&f, "Alternate", "alternate")
	f.flag("SAP Supported", "sap_supported", m.SAPSupported)
	return f
}
