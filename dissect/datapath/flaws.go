package datapath

import (
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Lengths that lie, and lengths the transport forbids (the InfiniBand
// family).
//
// The decoder takes an RC packet's length from what the wire carried: its
// length fields, unless one claims more than the frame on the wire (the
// record's original length, which a snap length may cut in the capture but
// not on the wire). Such a field lies (length-mismatch, by the rule CM
// messages follow), and the packet says how (Packet.LengthLie). A Send's
// packets must also keep to the path MTU: First and Middle carry exactly
// the path MTU, Last and Only at most (IBTA Vol 1, C9-92). A packet that
// does not breaks the length of its Send, which is then not judged against
// the inline threshold (rc-packet-length-invalid).
//
// Both go to the "rpc" record of the Send the packet is part of, counted
// and the first described. A packet that is part of no RPC-over-RDMA Send
// (another operation, a Send without its First, a Send of another upper
// layer, a retransmission) is counted for the run instead: one note for
// each code (Notes).

// MaxDMALength is the largest DMA Length a RETH may carry: IBTA's largest
// message, 2^31 octets (C9-94).
const MaxDMALength = 1 << 31

// Flaws are what the packets of a Send showed wrong in their lengths:
// length fields that claim more than the wire carried, and payloads that
// break the path MTU rule. Each is counted, and the first described.
type Flaws struct {
	Lies     int    // packets whose length fields lie
	LieFrame int    // the first of them
	Lie      string // how it lies (Packet.LengthLie)

	Sizes     int   // packets whose payload breaks the path MTU rule
	SizeFrame int   // the first of them
	SizeOp    uint8 // its opcode
	SizeLen   int   // its payload
	MTU       int   // the path MTU
}

// lie counts a packet whose length field lies.
func (w *Flaws) lie(p *Packet) {
	if w.Lies++; w.Lies == 1 {
		w.LieFrame, w.Lie = p.Frame, p.LengthLie
	}
}

// size counts a packet whose payload breaks the path MTU rule.
func (w *Flaws) size(p *Packet, mtu int) {
	if w.Sizes++; w.Sizes == 1 {
		w.SizeFrame, w.SizeOp, w.SizeLen, w.MTU = p.Frame, p.OpCode, p.PayloadLen, mtu
	}
}

// add counts o's flaws in w, keeping the first described.
func (w *Flaws) add(o *Flaws) {
	if o.Lies > 0 {
		if w.Lies == 0 || o.LieFrame < w.LieFrame {
			w.LieFrame, w.Lie = o.LieFrame, o.Lie
		}
		w.Lies += o.Lies
	}
	if o.Sizes > 0 {
		if w.Sizes == 0 || o.SizeFrame < w.SizeFrame {
			w.SizeFrame, w.SizeOp, w.SizeLen, w.MTU = o.SizeFrame, o.SizeOp, o.SizeLen, o.MTU
		}
		w.Sizes += o.Sizes
	}
}

// breaksMTU reports whether a SEND packet's payload of n octets breaks the
// path MTU rule (IBTA Vol 1, C9-92): First and Middle carry exactly the
// path MTU, Last and Only at most.
func breaksMTU(op uint8, n, mtu int) bool {
	switch op {
	case layers.OpSendFirst, layers.OpSendMiddle:
		return n != mtu
	}
	return n > mtu
}

// sizeRule says what the rule asks of the packet a Flaws describes first.
func (w *Flaws) sizeRule() string {
	name := sendNames[w.SizeOp]
	if w.SizeOp == layers.OpSendFirst || w.SizeOp == layers.OpSendMiddle {
		return fmt.Sprintf("a %s of %d octets, where the path MTU of %d makes every First and Middle packet exactly that long", name, w.SizeLen, w.MTU)
	}
	return fmt.Sprintf("a %s of %d octets, more than the path MTU of %d", name, w.SizeLen, w.MTU)
}

// packetFlaws adds to w what packet p of a Send shows wrong in its length:
// a length field that lies, and a payload that breaks the path MTU rule
// (mtu, 0 when the path MTU is not known).
func (fl *Follower) packetFlaws(w *Flaws, p *Packet, mtu int) {
	if p.LengthLie != "" {
		w.lie(p)
		fl.lieTaken = true
	}
	if mtu > 0 && breaksMTU(p.OpCode, p.PayloadLen, mtu) {
		w.size(p, mtu)
	}
}

// orphanPiece takes a SEND Middle or Last that came without the First of
// its Send: there is no Send to add it to. It is counted (drops.go), and
// what its length shows goes to the run's notes.
func (fl *Follower) orphanPiece(f *flow, p *Packet) {
	fl.OrphanPackets++
	fl.packetFlaws(&fl.stray, p, f.mtu)
}

// check hands a Send to its connection's checker. The flaws of a Send the
// checker does not take for an RPC-over-RDMA message (it counts those it
// does), which no "rpc" record shows, go to the run's notes.
func (fl *Follower) check(f *flow, s *Send) {
	n := fl.out.RPCMessages
	f.chk.Send(s)
	if s.Flaws.Lies|s.Flaws.Sizes != 0 && fl.out.RPCMessages == n {
		fl.stray.add(&s.Flaws)
	}
}

// flawFindings raises, on the "rpc" record of a Send, what its packets
// showed wrong in their lengths.
func flawFindings(s *Send, add func(finding.Code, string, ...any)) {
	w := &s.Flaws
	switch {
	case w.Lies == 1:
		add(finding.LengthMismatch, "a length field of one of the Send's packets claims more than its frame carried on the wire; its length was taken from the frame (frame %d: %s)",
			w.LieFrame, w.Lie)
	case w.Lies > 1:
		add(finding.LengthMismatch, "length fields of %d of the Send's packets claim more than their frames carried on the wire; their lengths were taken from the frames (the first, frame %d: %s)",
			w.Lies, w.LieFrame, w.Lie)
	}
	switch {
	case w.Sizes == 1:
		add(finding.RCPacketLengthInvalid, "one of the Send's packets breaks the path MTU rule (frame %d: %s): the Send's length is not judged against the inline threshold",
			w.SizeFrame, w.sizeRule())
	case w.Sizes > 1:
		add(finding.RCPacketLengthInvalid, "%d of the Send's packets break the path MTU rule (the first, frame %d: %s): the Send's length is not judged against the inline threshold",
			w.Sizes, w.SizeFrame, w.sizeRule())
	}
}

// flawNotes are the run's notes on the length flaws of packets no "rpc"
// record shows.
func (fl *Follower) flawNotes() []finding.Finding {
	var out []finding.Finding
	w, name := &fl.stray, fl.out.File
	if w.Lies > 0 {
		out = append(out, finding.New(finding.LengthMismatch,
			"%s: the length fields of %d RC %s part of no RPC-over-RDMA Send claim more than %s carried on the wire; %s taken from the %s (first at frame %d: %s)",
			name, w.Lies, plural(w.Lies, "packet", "packets"), plural(w.Lies, "its frame", "their frames"),
			plural(w.Lies, "its length was", "their lengths were"), plural(w.Lies, "frame", "frames"), w.LieFrame, w.Lie))
	}
	if w.Sizes > 0 {
		out = append(out, finding.New(finding.RCPacketLengthInvalid,
			"%s: %d SEND %s part of no RPC-over-RDMA message %s the path MTU rule (first at frame %d: %s)",
			name, w.Sizes, plural(w.Sizes, "packet", "packets"), plural(w.Sizes, "breaks", "break"), w.SizeFrame, w.sizeRule()))
	}
	return out
}

// readPSNs is how many PSNs an RDMA READ Request of n octets takes at a
// path MTU of mtu: ceil(n / mtu), without overflow for any n.
func readPSNs(n, mtu uint32) uint32 {
	q := n / mtu
	if n%mtu != 0 {
		q++
	}
	return q
}

// plural picks the singular or the plural by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
