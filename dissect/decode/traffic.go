package decode

import "github.com/rdmacm-pd/rdmacm-pd/dissect/record"

// dataCounts counts the InfiniBand-family packets that carry no CM MAD
// (RDMA data, acknowledgements, other MADs), so that a capture without
// connection messages can say it held RDMA traffic all the same. The
// classifier counts them where it finds their BTH.
type dataCounts struct{ rocev2, rocev1, ib int }

// Traffic is what the frames decoded so far held besides connection
// messages: InfiniBand-family packets that are not CM MADs, by transport,
// and the TCP segments looked at.
func (d *Decoder) Traffic() record.Traffic {
	return record.Traffic{RoCEv2: d.data.rocev2, RoCEv1: d.data.rocev1, InfiniBand: d.data.ib,
		TCPSegments: d.asm.Stats().Segments}
}
