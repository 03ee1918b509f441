package decode

// probe is a decoder for looking at frames without decoding them: the
// classifier only reads it.
var probe = &Decoder{}

// MayContinueMPA reports whether a frame is a TCP segment the reassembler
// would look at (payload, SYN, FIN or RST): the only kind of frame that can
// carry an earlier part of an MPA frame completed by a later one.
func MayContinueMPA(linkType uint16, data []byte) bool {
	return probe.classify(linkType, data).kind == kindTCP
}
