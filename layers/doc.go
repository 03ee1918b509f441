// Package layers holds gopacket layers for RDMA connection setup: the
// InfiniBand Local and Global Route Headers (LRH, GRH), the Base and
// Datagram Extended Transport Headers (BTH, DETH), the Management Datagram
// header (MAD), every Communication Manager message body (REQ, MRA, REJ, REP,
// RTU, DREQ, DREP, SIDR_REQ, SIDR_REP, LAP, APR), the 36-octet IP CM header
// that rdma_cm puts in front of a REQ's private data, the ERF record header
// that ibdump writes, the RPC-over-RDMA version 1 CM Private Data message
// of RFC 8797, and the private data of the other upper layers that define
// one (NVMe over Fabrics, iSER, SRP, RDS, rsockets, Lustre o2iblnd, SDP,
// IPoIB connected mode; see ulp.go); and for the data path the extended
// transport headers of the RC and UC opcodes (RETH, AETH, IETH, ImmDt,
// AtomicETH, AtomicAckETH, which BTH.NextLayerType chooses by opcode) and
// the RPC-over-RDMA version 1 transport header of RFC 8166 that starts
// every Send of an RPC-over-RDMA connection.
//
// Importing the package registers the layers with gopacket: UDP destination
// port 4791 (RoCEv2) decodes as BTH, EtherType 0x8915 (RoCEv1) as GRH, link
// type 247 (LINKTYPE_INFINIBAND) as LRH and link type 197 (ERF) as ERF, so
// gopacket.NewPacket decodes a whole CM exchange. Every layer is also a
// gopacket.DecodingLayer that decodes without allocating, resets every field
// on each call and never panics; structural problems (too few octets) are
// errors, protocol oddities are left for the caller to judge.
//
// gopacket's own layers package is imported as golayers throughout.
package layers
