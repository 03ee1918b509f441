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

func register(n int, name string, f func([]byte, gopacket.PacketBuilder) error) gopacket.LayerType {
	return gopacket.RegisterLayerType(layerTypeBase+n, gopacket.LayerTypeMetadata{
		Name:    name,
		Decoder: gopacket.DecodeFunc(f),
	})
}
