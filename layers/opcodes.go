package layers

import "github.com/gopacket/gopacket"

// The operation codes of the Reliable Connected transport (IBTA Vol 1,
// table 38), the low five bits of a BTH OpCode; the Unreliable Connected
// transport uses the SEND and RDMA WRITE ones with its own top three bits
// (0x20).
const (
	OpSendFirst          = 0x00
	OpSendMiddle         = 0x01
	OpSendLast           = 0x02
	OpSendLastImm        = 0x03
	OpSendOnly           = 0x04
	OpSendOnlyImm        = 0x05
	OpWriteFirst         = 0x06
	OpWriteMiddle        = 0x07
	OpWriteLast          = 0x08
	OpWriteLastImm       = 0x09
	OpWriteOnly          = 0x0a
	OpWriteOnlyImm       = 0x0b
	OpReadRequest        = 0x0c
	OpReadResponseFirst  = 0x0d
	OpReadResponseMiddle = 0x0e
	OpReadResponseLast   = 0x0f
	OpReadResponseOnly   = 0x10
	OpAcknowledge        = 0x11
	OpAtomicAcknowledge  = 0x12
	OpCmpSwap            = 0x13
	OpFetchAdd           = 0x14
	OpSendLastInvalidate = 0x16
	OpSendOnlyInvalidate = 0x17
	// OpCNP is the RoCEv2 Congestion Notification Packet (RoCEv2 Annex
	// A17.9.3): a BTH, 16 reserved octets, the ICRC.
	OpCNP = 0x81

	rcLastOpcode  = OpSendOnlyInvalidate
	ucLastOpcode  = OpWriteOnlyImm
	opReserved    = 0x15 // no RC operation has this code
	operationMask = 0x1f
	transportMask = 0xe0
)

// ExtendedHeaders lists, in wire order, the extended transport headers that
// follow a BTH of this OpCode in the RC and UC transports (IBTA Vol 1,
// section 9.3): RETH, AETH, IETH, ImmDt, AtomicETH, AtomicAckETH. It returns
// nil for opcodes without any (SEND First, Middle, Last and Only, RDMA WRITE
// Middle and Last, READ Response Middle) and for the other transports, whose
// headers (DETH, RDETH) this function does not describe.
func ExtendedHeaders(op uint8) []gopacket.LayerType {
	switch op & transportMask {
	case TransportRC:
		if op&operationMask > rcLastOpcode {
			return nil // 0x18 to 0x1f: reserved (and beyond the table)
		}
	case TransportUC:
		if op&operationMask > ucLastOpcode {
			return nil
		}
	default:
		return nil
	}
	return extHeaders[op&operationMask]
}

// The layer types of the extended headers as constants (the same numbers
// layertypes.go registers), so that the tables and NextLayerType methods
// below do not make the registration refer to itself.
const (
	ltRETH         = gopacket.LayerType(layerTypeBase + 30)
	ltAETH         = gopacket.LayerType(layerTypeBase + 31)
	ltIETH         = gopacket.LayerType(layerTypeBase + 32)
	ltImmDt        = gopacket.LayerType(layerTypeBase + 33)
	ltAtomicETH    = gopacket.LayerType(layerTypeBase + 34)
	ltAtomicAckETH = gopacket.LayerType(layerTypeBase + 35)
	ltBTH          = gopacket.LayerType(layerTypeBase + 2)
)

var extHeaders = [rcLastOpcode + 1][]gopacket.LayerType{
	OpSendLastImm:        {ltImmDt},
	OpSendOnlyImm:        {ltImmDt},
	OpWriteFirst:         {ltRETH},
	OpWriteLastImm:       {ltImmDt},
	OpWriteOnly:          {ltRETH},
	OpWriteOnlyImm:       {ltRETH, ltImmDt},
	OpReadRequest:        {ltRETH},
	OpReadResponseFirst:  {ltAETH},
	OpReadResponseLast:   {ltAETH},
	OpReadResponseOnly:   {ltAETH},
	OpAcknowledge:        {ltAETH},
	OpAtomicAcknowledge:  {ltAETH, ltAtomicAckETH},
	OpCmpSwap:            {ltAtomicETH},
	OpFetchAdd:           {ltAtomicETH},
	OpSendLastInvalidate: {ltIETH},
	OpSendOnlyInvalidate: {ltIETH},
}

// IsRC reports whether op is an operation of the Reliable Connected
// transport (0x00 to 0x14, 0x16, 0x17).
func IsRC(op uint8) bool { return op <= rcLastOpcode && op != opReserved }

// extNext is the layer that follows the extended header t in a packet of
// OpCode op: the next extended header, or the payload when there is one.
func extNext(op uint8, t gopacket.LayerType, payload []byte) gopacket.LayerType {
	hs := ExtendedHeaders(op)
	for i, h := range hs {
		if h == t && i+1 < len(hs) {
			return hs[i+1]
		}
	}
	if len(payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}
