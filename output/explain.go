package output

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"

	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// explain says, when a run found no connection message, or messages but
// no connection, what the capture held instead and the likely cause; and
// when attempts were cut short by an input that ended early. It returns
// paragraphs, or nothing when the result speaks for itself.
func explain(s *record.Summary) []string {
	var out []string
	conns := 0
	for _, n := range s.Connections {
		conns += n
	}
	switch {
	case s.Frames == 0:
		if s.DecodeErrors == 0 {
			out = append(out, "The capture holds no frames.")
		}
	case s.Messages == 0:
		out = append(out, noMessages(s)...)
	case conns == 0:
		out = append(out, fmt.Sprintf("%s but no request (REQ or MPA Request): the capture started after the "+
			"connections were requested, so what they negotiated is not in it. Start capturing before the mount "+
			"(or before the application connects).", capital(count(s.Messages, "connection message"))))
	}
	if s.Messages > 0 {
		if oob := outOfBand(&s.Traffic, "Some"); oob != "" {
			out = append(out, oob)
		}
	}
	if n := s.Connections[record.Cut]; n > 0 {
		what, it := "attempt has", "it is"
		if n > 1 {
			what, it = "attempts have", "they are"
		}
		out = append(out, fmt.Sprintf("%d connection %s no reply because an input ended early (%s): the reply "+
			"may be in what was not read, so %s counted as cut, not as unanswered.", n, what, whyCut(s), it))
	}
	return out
}

// whyCut says what ended an input early: a damaged input (whose error
// says where), an interrupt, or the frame count (-c).
func whyCut(s *record.Summary) string {
	switch {
	case s.DecodeErrors > 0:
		return "the error says where"
	case s.Findings[finding.RunInterrupted] > 0:
		return "an interrupt cut it short"
	}
	return "the frame count of -c was reached"
}

// noMessages describes a capture without a connection message.
func noMessages(s *record.Summary) []string {
	t := s.Traffic
	var held []string
	for _, d := range []struct {
		n    int
		name string
	}{{t.RoCEv2, "RoCEv2"}, {t.RoCEv1, "RoCEv1"}, {t.InfiniBand, "InfiniBand"}} {
		if d.n > 0 {
			held = append(held, fmt.Sprintf("%d %s", d.n, d.name))
		}
	}
	out := []string{fmt.Sprintf("No connection message in %s.", count(s.Frames, "frame"))}
	var what []string
	if len(held) > 0 {
		what = append(what, fmt.Sprintf("%s RDMA data frames (packets other than CM MADs)", orAnd(held, "and")))
	}
	if t.TCPSegments > 0 {
		what = append(what, fmt.Sprintf("%s, none of them starting an MPA Request or Reply", count(t.TCPSegments, "TCP segment")))
	}
	if skipped := skippedLinks(s); skipped != "" {
		what = append(what, skipped)
	}
	if len(what) > 0 {
		out[0] += " The capture holds " + orAnd(what, "and") + "."
	}
	switch {
	case len(held) > 0:
		out = append(out, withoutCM(&t)...)
	case t.TCPSegments > 0:
		out = append(out, "No RDMA traffic was captured. For iWARP, the MPA exchange opens each TCP connection: "+
			"start capturing before the mount. For RoCE, capture on the interface that carries it; hardware RoCE "+
			"NICs bypass the kernel, so tcpdump on their netdev sees nothing (use a port mirror, ibdump or the "+
			"RDMA sniffer device: docs/capture.md). RoCEv2 on another UDP port than 4791 needs --roce-port.")
	default:
		out = append(out, "No RDMA traffic was captured: capture on the interface that carries it (hardware RoCE "+
			"NICs bypass the kernel: see docs/capture.md); RoCEv2 on another UDP port than 4791 needs --roce-port.")
	}
	return out
}

// setupMissing is the advice for connected traffic whose setup is not in
// the capture, when nothing says it was set up otherwise.
const setupMissing = "The connection setup is not in this capture: the RDMA traffic was captured after its " +
	"connections were set up. Start capturing before the mount (or before the application connects), then mount."

// withoutCM says what the RDMA data frames of a capture without CM
// messages were, by what was seen: connected traffic set up out of band
// over TCP, DC and UD traffic (which never use CM), and connected traffic
// whose setup is not in the capture (the only case where capturing
// earlier would help).
func withoutCM(t *record.Traffic) []string {
	var out []string
	if oob := outOfBand(t, "The"); oob != "" {
		out = append(out, oob)
	}
	var never []string
	for _, c := range []struct {
		n    int
		name string
	}{{t.DC, "DC"}, {t.UD, "UD"}} {
		if c.n > 0 {
			never = append(never, c.name)
		}
	}
	if len(never) > 0 {
		out = append(out, fmt.Sprintf("The %s traffic (%s) never uses CM: no private data to check.",
			orAnd(never, "and"), count(t.DC+t.UD, "frame")))
	}
	rest := t.RC + t.UC + t.XRC - t.OutOfBand
	switch {
	case len(out) == 0:
		out = append(out, setupMissing)
	case rest > 0:
		out = append(out, fmt.Sprintf("The setup of the other %s traffic (%s) is not in this capture: it was captured "+
			"after its connections were set up. Start capturing before the mount (or before the application "+
			"connects), then mount.", connectedNames(t), count(rest, "frame")))
	}
	return out
}

// outOfBand says which connected traffic was set up out of band over TCP,
// or "": its subject opens with which ("The", or "Some" beside
// connections set up with CM).
func outOfBand(t *record.Traffic, which string) string {
	if t.OutOfBand == 0 {
		return ""
	}
	var ports []string
	for _, p := range t.OutOfBandPorts {
		ports = append(ports, fmt.Sprint(p))
	}
	port := "port " + orAnd(ports, "and")
	if len(ports) > 1 {
		port = "ports " + orAnd(ports, "and")
	}
	return fmt.Sprintf("%s %s traffic (%s) was connected out of band over TCP (%s): no CM, so no private data.",
		which, connectedNames(t), count(t.OutOfBand, "frame"), port)
}

// connectedNames names the connected transports the traffic held: "RC",
// "RC and UC".
func connectedNames(t *record.Traffic) string {
	var names []string
	for _, c := range []struct {
		n    int
		name string
	}{{t.RC, "RC"}, {t.UC, "UC"}, {t.XRC, "XRC"}} {
		if c.n > 0 {
			names = append(names, c.name)
		}
	}
	return orAnd(names, "and")
}

// skippedLinks names the frames of link types passed over, by input, or "".
func skippedLinks(s *record.Summary) string {
	n := 0
	var names []string
	for _, in := range s.Inputs {
		if in.Skipped == 0 {
			continue
		}
		n += in.Skipped
		for _, lt := range in.LinkTypes {
			if name := linkTypeName(lt); !layers.SupportedLink(lt) && !contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s of link types it cannot carry RDMA on (%s), passed over", count(n, "frame"), strings.Join(names, ", "))
}

// linkTypeName names a LINKTYPE value as gopacket does, with its number.
func linkTypeName(lt uint16) string {
	name := golayers.LinkType(lt).String()
	if strings.HasPrefix(name, "UnknownLinkType") || name == "" {
		return fmt.Sprintf("link type %d", lt)
	}
	return fmt.Sprintf("%s, %d", name, lt)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// orAnd joins words as "a, b and c".
func orAnd(words []string, and string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + and + " " + words[len(words)-1]
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
