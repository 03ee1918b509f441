package output

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// --anonymize: names in place of addresses, in every format.
//
// One anonymizer stands in front of the renderer (New wraps it) and
// rewrites each record before the renderer sees it. It gives each address
// a name the first time it sees it, in the order the records come (the
// output's order), and the same name ever after:
//
//   - an IP address is hostN; so is a GID that holds an IPv4 address
//     (::ffff:192.0.2.1, as RoCE makes one), and a GID whose 16 octets are
//     an IPv6 address already named (RoCEv2 takes its GIDs from the IP
//     addresses). The same 16 octets are always the same name.
//   - any other GID of RoCEv1 or InfiniBand (a subnet prefix and a port
//     GUID) is gidN;
//   - a GUID (the Local CA GUID of a REQ or REP, an SRP port identifier's
//     halves) is guidN.
//
// Unset addresses (0.0.0.0, ::, a GUID of 0) stay as they are: they name
// nobody. LIDs, QPNs, ports and Service IDs stay too.
//
// Raw octets cannot hold a name. The octets of the addresses a message
// shows are zeroed in its private data (the hex dump says so). A REJ's
// Additional Reject Information that is a GID shows its name; one that
// holds a ClassPortInfo, the Additional Information of an APR or
// SIDR_REP, and SDP addresses of an unknown IP version are zeroed whole.
//
// Free text that may hold an address typed by the user (the command line,
// the -Y expression) or made by the dissector (findings) has each IP
// address in it named the same way. No output shows a MAC address; a GID
// made from one is a GID.

// anonymizer is the mapping from addresses to names.
type anonymizer struct {
	addrs map[[16]byte]placeholder // IP addresses (IPv4 in its IPv4-mapped form) and GIDs
	guids map[uint64]uint32
	n     [3]uint32 // the names given so far, by class
}

// placeholder is a name: its class and number.
type placeholder struct {
	class record.PlaceholderClass
	n     uint32
}

func newAnonymizer() *anonymizer {
	return &anonymizer{addrs: map[[16]byte]placeholder{}, guids: map[uint64]uint32{}}
}

// name is the placeholder of addr, 16 octets (an IPv4 address in its
// IPv4-mapped form). class is what addr is when first seen; an
// IPv4-mapped address is always a host. ok is false for an unset address.
func (a *anonymizer) name(addr [16]byte, class record.PlaceholderClass) (p placeholder, ok bool) {
	if netip.AddrFrom16(addr).Unmap().IsUnspecified() {
		return placeholder{}, false
	}
	if p, ok := a.addrs[addr]; ok {
		return p, true
	}
	if netip.AddrFrom16(addr).Is4In6() {
		class = record.HostPlaceholder
	}
	a.n[class]++
	p = placeholder{class, a.n[class]}
	a.addrs[addr] = p
	return p, true
}

// guid is the name of a GUID; ok is false for 0.
func (a *anonymizer) guid(g uint64) (string, bool) {
	if g == 0 {
		return "", false
	}
	n, ok := a.guids[g]
	if !ok {
		a.n[record.GUIDPlaceholder]++
		n = a.n[record.GUIDPlaceholder]
		a.guids[g] = n
	}
	return string(record.AppendPlaceholder(nil, record.GUIDPlaceholder, n)), true
}

func (p placeholder) String() string { return string(record.AppendPlaceholder(nil, p.class, p.n)) }

// as16 is an address of 4 or 16 octets in 16, IPv4 mapped; ok is false
// for any other length.
func as16(b []byte) (out [16]byte, ok bool) {
	switch len(b) {
	case 4:
		return netip.AddrFrom4([4]byte(b)).As16(), true
	case 16:
		return [16]byte(b), true
	}
	return out, false
}

// endpoint is e with a name in place of its address; gids says the
// transport takes its endpoints from GIDs (RoCEv1, InfiniBand). A LID, or
// no address, stays.
func (a *anonymizer) endpoint(e record.Endpoint, gids bool, raw *rawAddrs) record.Endpoint {
	if e.Kind != record.IPv4 && e.Kind != record.IPv6 {
		return e
	}
	class := record.HostPlaceholder
	if gids {
		class = record.GIDPlaceholder
	}
	raw.add16(e.Addr)
	p, ok := a.name(e.Addr, class)
	if !ok {
		return e
	}
	return e.WithPlaceholder(p.class, p.n)
}

// gidTransport reports whether a transport's endpoints are GIDs.
func gidTransport(t record.Transport) bool { return t == record.RoCEv1 || t == record.InfiniBand }

// rawAddrs are the octets of the addresses a message shows, to zero them
// where they appear in its raw octets.
type rawAddrs [][]byte

// add16 adds an address of 16 octets, and the IPv4 address an
// IPv4-mapped one holds.
func (r *rawAddrs) add16(b [16]byte) {
	if r == nil {
		return
	}
	if a := netip.AddrFrom16(b); a.Is4In6() {
		v4 := a.Unmap().As4()
		r.add(v4[:])
	}
	r.add(b[:])
}

// add adds octets that are not all zero.
func (r *rawAddrs) add(b []byte) {
	if r != nil && len(b) > 0 && !bytes.Equal(b, make([]byte, len(b))) {
		*r = append(*r, slices.Clone(b))
	}
}

// zero returns b with every occurrence of the addresses' octets zeroed (a
// copy, when any was), and whether any was.
func (r rawAddrs) zero(b []byte) ([]byte, bool) {
	var out []byte
	for _, a := range r {
		for from := 0; ; {
			src := b
			if out != nil {
				src = out
			}
			i := bytes.Index(src[from:], a)
			if i < 0 {
				break
			}
			if out == nil {
				out = slices.Clone(b)
			}
			clear(out[from+i : from+i+len(a)])
			from += i + len(a)
		}
	}
	if out == nil {
		return b, false
	}
	return out, true
}

// The fields that hold addresses without saying so by their kind, by key.
const (
	keyCAGUID     = "local_ca_guid"     // CM REQ and REP: a GUID (ID64)
	keySrcNID     = "src_nid"           // Lustre: a NID, "192.0.2.1@o2ib" (Text)
	keyDstNID     = "dst_nid"           //
	keyInitiator  = "initiator_port_id" // SRP: two GUIDs, the identifier extension and the port's (Blob)
	keyTarget     = "target_port_id"    //
	keyAddInfo    = "additional_info"   // APR and SIDR_REP: may hold a ClassPortInfo with GIDs (Blob)
	keyARI        = "ari"               // REJ: by reason, a GID or a ClassPortInfo (Blob)
	keyRawSrc     = "src"               // SDP of an unknown IP version: an address (Blob)
	keyRawDst     = "dst"               //
	nidSeparator  = "@"
	guidSeparator = ":"
)

// fields rewrites a layer's fields: names in place of GIDs, addresses,
// GUIDs and Lustre NIDs. The octets of what it replaced go to raw; blobs
// are left for blobs, once raw holds all of the message's addresses.
func (a *anonymizer) fields(fs []layers.Field, gids bool, raw *rawAddrs) []layers.Field {
	if fs == nil {
		return nil
	}
	out := slices.Clone(fs)
	text := func(f *layers.Field, s string) {
		*f = layers.Field{Name: f.Name, Key: f.Key, Kind: layers.Text, Bytes: []byte(s), Note: f.Note}
	}
	for i := range out {
		f := &out[i]
		switch {
		case f.Kind == layers.GID || f.Kind == layers.Addr:
			b, ok := as16(f.Bytes)
			if !ok {
				continue
			}
			raw.add16(b)
			class := record.HostPlaceholder
			if f.Kind == layers.GID && gids {
				class = record.GIDPlaceholder
			}
			if p, ok := a.name(b, class); ok {
				text(f, p.String())
			}
		case f.Kind == layers.ID64 && f.Key == keyCAGUID:
			raw.add(binary.BigEndian.AppendUint64(nil, f.Value))
			if g, ok := a.guid(f.Value); ok {
				text(f, g)
			}
		case f.Kind == layers.Text && (f.Key == keySrcNID || f.Key == keyDstNID):
			addr, net, ok := strings.Cut(string(f.Bytes), nidSeparator)
			ip, err := netip.ParseAddr(addr)
			if !ok || err != nil || !ip.Is4() {
				continue
			}
			v4 := ip.As4()
			raw.add(v4[:])
			raw.add([]byte{v4[3], v4[2], v4[1], v4[0]}) // a little-endian NID
			if p, ok := a.name(ip.As16(), record.HostPlaceholder); ok {
				text(f, p.String()+nidSeparator+net)
			}
		case f.Kind == layers.Blob && (f.Key == keyInitiator || f.Key == keyTarget) && len(f.Bytes) == 16:
			var halves []string
			for _, h := range [][]byte{f.Bytes[:8], f.Bytes[8:]} {
				raw.add(h)
				g, ok := a.guid(binary.BigEndian.Uint64(h))
				if !ok {
					g = "0"
				}
				halves = append(halves, g)
			}
			text(f, strings.Join(halves, guidSeparator))
		}
	}
	return out
}

// blobs zeroes, in the blobs of fs (already a copy), the octets of raw's
// addresses, and all of those that may hold an address of their own; a
// REJ's Additional Reject Information that is a GID gets its name. reason
// is a REJ's; gids as for fields.
func (a *anonymizer) blobs(fs []layers.Field, raw rawAddrs, reason uint16, gids bool) {
	for i := range fs {
		f := &fs[i]
		if f.Kind != layers.Blob {
			continue
		}
		switch {
		case f.Key == keyARI && ariIsGID(reason) && len(f.Bytes) == 16:
			class := record.HostPlaceholder
			if gids {
				class = record.GIDPlaceholder
			}
			if p, ok := a.name([16]byte(f.Bytes), class); ok {
				*f = layers.Field{Name: f.Name, Key: f.Key, Kind: layers.Text, Bytes: []byte(p.String()), Note: f.Note}
			}
		case f.Key == keyAddInfo, f.Key == keyRawSrc, f.Key == keyRawDst, f.Key == keyARI && ariHoldsGID(reason):
			f.Bytes = make([]byte, len(f.Bytes))
		default:
			f.Bytes, _ = raw.zero(f.Bytes)
		}
	}
}

// ariIsGID reports whether a REJ of this reason carries a GID as its
// Additional Reject Information: the GID rejected.
func ariIsGID(reason uint16) bool { return reason == 12 || reason == 18 }

// ariHoldsGID reports whether a REJ of this reason carries a GID in its
// Additional Reject Information: the GID rejected (12, 18), or a
// ClassPortInfo to redirect to (24, 25).
func ariHoldsGID(reason uint16) bool { return ariIsGID(reason) || reason == 24 || reason == 25 }

// message is a copy of m with names in place of its addresses: the maker
// may reuse m and what it points to.
func (a *anonymizer) message(m *record.Message) *record.Message {
	c := *m
	gids := gidTransport(m.Transport)
	var raw rawAddrs
	c.Src, c.Dst = a.endpoint(m.Src, gids, &raw), a.endpoint(m.Dst, gids, &raw)
	if m.Tunnel != nil {
		c.Tunnel = slices.Clone(m.Tunnel)
		for i := range c.Tunnel {
			c.Tunnel[i].Fields = a.fields(c.Tunnel[i].Fields, false, &raw)
		}
	}
	l := m.Layers()
	lists := []*[]layers.Field{&l.LRH, &l.GRH, &l.BTH, &l.DETH, &l.MAD, &l.CM, &l.IPCM, &l.MPA}
	for _, fs := range lists {
		*fs = a.fields(*fs, gids, &raw)
	}
	if m.ULP != nil {
		u := *m.ULP
		u.Fields = a.fields(u.Fields, gids, &raw)
		c.ULP = &u
		lists = append(lists, &u.Fields)
	}
	var reason uint16
	if m.CMInfo != nil {
		ci := *m.CMInfo
		reason = ci.RejectReason
		if m.Kind == record.KindREJ && ariHoldsGID(reason) {
			ci.ARI = nil // the message's line leaves it out; its field names or zeroes it
		} else {
			ci.ARI, _ = raw.zero(ci.ARI)
		}
		c.CMInfo = &ci
	}
	if m.Kind != record.KindREJ {
		reason = 0
	}
	for _, fs := range lists {
		a.blobs(*fs, raw, reason, gids)
	}
	c.Octets = record.Octets{Decoded: &l}
	c.PrivateData, c.AddressesZeroed = raw.zero(m.PrivateData)
	c.Findings = a.findings(m.Findings)
	return &c
}

func (a *anonymizer) rpc(r *record.RPC) {
	gids := gidTransport(r.Transport)
	r.Src, r.Dst = a.endpoint(r.Src, gids, nil), a.endpoint(r.Dst, gids, nil)
	r.Findings = a.findings(r.Findings)
}

func (a *anonymizer) connection(c *record.Connection) {
	gids := gidTransport(c.Transport)
	c.Initiator, c.Responder = a.endpoint(c.Initiator, gids, nil), a.endpoint(c.Responder, gids, nil)
	c.RejectReason = a.text(c.RejectReason)
	c.Findings = a.findings(c.Findings)
}

// findings are fs with the addresses in their messages named (a copy,
// when any was).
func (a *anonymizer) findings(fs []finding.Finding) []finding.Finding {
	var out []finding.Finding
	for i, f := range fs {
		if t := a.text(f.Message); t != f.Message {
			if out == nil {
				out = slices.Clone(fs)
			}
			out[i].Message = t
		}
	}
	if out == nil {
		return fs
	}
	return out
}

// addrRun is a run of text that may be or hold an IP address: hex digits,
// colons and dots, with at least one colon or dot.
var (
	addrRun = regexp.MustCompile(`[0-9A-Fa-f:.]*[:.][0-9A-Fa-f:.]*`)
	ipv4Run = regexp.MustCompile(`[0-9]{1,3}(?:\.[0-9]{1,3}){3}`)
)

// text is s with a name in place of each IP address in it ("192.0.2.1",
// "192.0.2.1:4420", "2001:db8::1"). A nil anonymizer leaves s as it is.
func (a *anonymizer) text(s string) string {
	if a == nil || !strings.ContainsAny(s, ".:") {
		return s
	}
	named := func(ip netip.Addr) (string, bool) {
		p, ok := a.name(ip.As16(), record.HostPlaceholder)
		if !ok {
			return "", false
		}
		return p.String(), true
	}
	return addrRun.ReplaceAllStringFunc(s, func(run string) string {
		if ip, err := netip.ParseAddr(run); err == nil {
			if n, ok := named(ip); ok {
				return n
			}
			return run
		}
		if ap, err := netip.ParseAddrPort(run); err == nil {
			if n, ok := named(ap.Addr()); ok {
				return n + run[strings.LastIndexByte(run, ':'):]
			}
			return run
		}
		return ipv4Run.ReplaceAllStringFunc(run, func(v4 string) string {
			if ip, err := netip.ParseAddr(v4); err == nil {
				if n, ok := named(ip); ok {
					return n
				}
			}
			return v4
		})
	})
}

// anonRenderer is a renderer behind the anonymizer. quiet: the renderer
// shows no message but its findings (-q), so only those are rewritten,
// and the messages take no names the output would not show.
type anonRenderer struct {
	a     *anonymizer
	next  Renderer
	quiet bool
}

func (r anonRenderer) Message(m *record.Message) error {
	if r.quiet {
		c := *m
		c.Findings = r.a.findings(m.Findings)
		return r.next.Message(&c)
	}
	return r.next.Message(r.a.message(m))
}

func (r anonRenderer) RPC(rec *record.RPC) error {
	r.a.rpc(rec)
	return r.next.RPC(rec)
}

func (r anonRenderer) Connection(c *record.Connection) error {
	r.a.connection(c)
	return r.next.Connection(c)
}

func (r anonRenderer) Update(u *record.ConnectionUpdate) error {
	gids := gidTransport(u.Transport)
	u.Initiator, u.Responder = r.a.endpoint(u.Initiator, gids, nil), r.a.endpoint(u.Responder, gids, nil)
	u.Findings = r.a.findings(u.Findings)
	return r.next.Update(u)
}

func (r anonRenderer) Summary(s *record.Summary) error {
	s.Notes = r.a.findings(s.Notes)
	return r.next.Summary(s)
}

func (r anonRenderer) Close() error { return r.next.Close() }
