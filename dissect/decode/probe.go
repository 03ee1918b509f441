package decode

// Probe looks at frames without decoding them. It is not safe for
// concurrent use.
type Probe struct{ d Decoder }

// MayContinueMPA reports whether a frame is a TCP segment the reassembler
// would look at (payload, SYN, FIN or RST): the only kind of frame that can
// carry an earlier part of an MPA frame completed by a later one.
func (p *Probe) MayContinueMPA(linkType uint16, data []byte) bool {
	return p.d.classify(linkType, data).kind == kindTCP
}
