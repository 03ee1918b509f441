package layers

import "github.com/gopacket/gopacket"

// Layer type numbers 1500 to 1599 are this package's, inside the range gopacket
// keeps for application layers that must decode fast (1000 to 1999).
const layerTypeBase = 1500

// cmLayerTypeOffset is where the CM message layer types start, in attribute
// ID order from REQ to APR.
const cmLayerTypeOffset = 5

// The layer types of this package.
var (
	LayerTypeLRH       = register(0, "LRH", decodeLRH)
	LayerTypeGRH       = register(1, "GRH", decodeGRH)
	LayerTypeBTH       = register(2, "BTH", decodeBTH)
	LayerTypeDETH      = register(3, "DETH", decodeDETH)
	LayerTypeMAD       = register(4, "MAD", decodeMAD)
	LayerTypeCMReq     = register(5, "CM REQ", decodeCM(AttrREQ))
	LayerTypeCMMra     = register(6, "CM MRA", decodeCM(AttrMRA))
	LayerTypeCMRej     = register(7, "CM REJ", decodeCM(AttrREJ))
	LayerTypeCMRep     = register(8, "CM REP", decodeCM(AttrREP))
	LayerTypeCMRtu     = register(9, "CM RTU", decodeCM(AttrRTU))
	LayerTypeCMDreq    = register(10, "CM DREQ", decodeCM(AttrDREQ))
	LayerTypeCMDrep    = register(11, "CM DREP", decodeCM(AttrDREP))
	LayerTypeCMSidrReq = register(12, "CM SIDR_REQ", decodeCM(AttrSIDRREQ))
	LayerTypeCMSidrRep = register(13, "CM SIDR_REP", decodeCM(AttrSIDRREP))
	LayerTypeCMLap     = register(14, "CM LAP", decodeCM(AttrLAP))
	LayerTypeCMApr     = register(15, "CM APR", decodeCM(AttrAPR))
	LayerTypeIPCM      = register(16, "IP CM header", decodeIPCM)
	LayerTypeRPCRDMA   = register(17, "RPC-over-RDMA CM Private Data", decodeRPCRDMA)
	LayerTypeERF       = register(18, "ERF", decodeERF)
	LayerTypeMPA       = register(19, "MPA", decodeMPA)

	// iWARP after the MPA exchange (20 to 29).
	LayerTypeFPDU             = register(20, "MPA FPDU", decodeFPDU)
	LayerTypeDDP              = register(21, "DDP", decodeDDP)
	LayerTypeRDMAPReadRequest = register(22, "RDMAP Read Request", decodeRDMAPReadRequest)
	LayerTypeRDMAPTerminate   = register(23, "RDMAP Terminate", decodeRDMAPTerminate)

	// The RC data path: the extended transport headers after a BTH and the
	// RPC-over-RDMA transport header at the start of a SEND.
	LayerTypeRETH          = register(30, "RETH", decodeRETH)
	LayerTypeAETH          = register(31, "AETH", decodeAETH)
	LayerTypeIETH          = register(32, "IETH", decodeIETH)
	LayerTypeImmDt         = register(33, "ImmDt", decodeImmDt)
	LayerTypeAtomicETH     = register(34, "AtomicETH", decodeAtomicETH)
	LayerTypeAtomicAckETH  = register(35, "AtomicAckETH", decodeAtomicAckETH)
	LayerTypeRPCRDMAHeader = register(36, "RPC-over-RDMA", decodeRPCRDMAHeader)
)

// The layer types of the upper layers' CM private data (n = 50 to 69).
var (
	LayerTypeNVMeRDMAReq     = register(50, "NVMe-oF RDMA_CM_REQUEST Private Data", decodeNVMeRDMAReq)
	LayerTypeNVMeRDMARep     = register(51, "NVMe-oF RDMA_CM_ACCEPT Private Data", decodeNVMeRDMARep)
	LayerTypeNVMeRDMARej     = register(52, "NVMe-oF RDMA_CM_REJECT Private Data", decodeNVMeRDMARej)
	LayerTypeISER            = register(53, "iSER CM Header", decodeISER)
	LayerTypeSRPLoginReq     = register(54, "SRP_LOGIN_REQ", decodeSRPLoginReq)
	LayerTypeSRPLoginReqRDMA = register(55, "SRP_LOGIN_REQ (rdma_cm)", decodeSRPLoginReqRDMA)
	LayerTypeSRPLoginRsp     = register(56, "SRP_LOGIN_RSP", decodeSRPLoginRsp)
	LayerTypeSRPLoginRej     = register(57, "SRP_LOGIN_REJ", decodeSRPLoginRej)
	LayerTypeRDS             = register(58, "RDS Connect Private Data", decodeRDS)
	LayerTypeRDS6            = register(59, "RDS Connect Private Data (IPv6)", decodeRDS6)
	LayerTypeRSocket         = register(60, "rsockets Connection Data", decodeRSocket)
	LayerTypeLustreO2IBMsg   = register(61, "Lustre o2iblnd Message", decodeLustreO2IBMsg)
	LayerTypeLustreO2IBRej   = register(62, "Lustre o2iblnd Reject", decodeLustreO2IBRej)
	LayerTypeSDPHello        = register(63, "SDP Hello", decodeSDPHello)
	LayerTypeSDPHelloAck     = register(64, "SDP HelloAck", decodeSDPHelloAck)
	LayerTypeIPoIBCM         = register(65, "IPoIB-CM Private Data", decodeIPoIBCM)
)

func register(n int, name string, f func([]byte, gopacket.PacketBuilder) error) gopacket.LayerType {
	return gopacket.RegisterLayerType(layerTypeBase+n, gopacket.LayerTypeMetadata{
		Name:    name,
		Decoder: gopacket.DecodeFunc(f),
	})
}
