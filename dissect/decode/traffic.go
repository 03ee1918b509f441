package decode

// dataCounts counts the InfiniBand-family packets that carry no CM MAD
// (RDMA data, acknowledgements, other MADs), so that a capture without
// connection messages can say it held RDMA traffic all the same: by
// carrier, and by transport (countData, hosts.go). The classifier counts
// them where it finds their BTH.
type dataCounts struct {
	rocev2, rocev1, ib  int
	rc, uc, xrc, dc, ud int
}
