package output_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/crafttest"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// anonInputs writes captures that put addresses everywhere the output
// shows them: RoCEv2 over IPv4 with its traffic (endpoints, IPv4-mapped
// GIDs, the IP CM header, the CA GUIDs, rpc records), over IPv6, RoCEv1
// with GIDs that are no IP address, iWARP (ports), a VXLAN tunnel (outer
// addresses), RDS, Lustre, SDP and SRP private data (addresses, NIDs, port
// identifiers), and a REJ whose Additional Reject Information is a GID. It
// returns the files, and the addresses, GUIDs and MACs they hold.
func anonInputs(t *testing.T) (files []string, addrs []netip.Addr, guids []uint64, macs [][]byte) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, frames []craft.Frame, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := craft.WriteFile(p, frames); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	peers := func(a, b craft.Endpoint) {
		addrs = append(addrs, a.IP, b.IP)
		macs = append(macs, a.MAC, b.MAC)
	}
	exchangeGUIDs := func(n int) { // the REQ's and the REP's Local CA GUIDs (craft.Exchange)
		guids = append(guids, 0x0002c90300000001+uint64(n), 0x0002c90300000101+uint64(n))
	}

	// RoCEv2 over IPv4, with NFS-like traffic and a finding on it.
	x := craft.Exchange{Transport: craft.RoCEv2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
		Responder: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}
	fs, err := x.NFSTraffic(craft.Traffic{Findings: []string{"inline-threshold-exceeded"}})
	write("rocev2.pcap", fs, err)
	peers(craft.Endpoints(0, false))
	exchangeGUIDs(0)

	// RoCEv2 over IPv6 (index 6: the REP's GUID of index 1 would be the
	// SRP target's Service ID below, which --anonymize keeps).
	x = craft.Exchange{Transport: craft.RoCEv2, IPv6: true, Index: 6}
	fs, err = x.Frames()
	write("rocev2-ipv6.pcap", fs, err)
	peers(craft.Endpoints(6, true))
	exchangeGUIDs(6)

	// RoCEv1 between GIDs made of a subnet prefix and a port GUID.
	a, b := craft.Endpoints(2, false)
	a.IP, b.IP = netip.MustParseAddr("fe80::2:c903:a:1"), netip.MustParseAddr("fe80::2:c903:a:2")
	x = craft.Exchange{Transport: craft.RoCEv1, Index: 2, Initiator2: &a, Responder2: &b}
	fs, err = x.Frames()
	write("rocev1.pcap", fs, err)
	peers(a, b)
	exchangeGUIDs(2)

	// iWARP: addresses with ports.
	iw := craft.IWARPExchange{Rev: 2, Index: 3}
	fs, err = iw.Frames()
	write("iwarp.pcap", fs, err)
	peers(craft.Endpoints(3, false))

	// A VXLAN tunnel: its outer addresses.
	x = craft.Exchange{Transport: craft.RoCEv2, Index: 4}
	fs, err = x.Frames()
	for i := range fs {
		if err == nil {
			fs[i].Data, err = crafttest.Wrap(fs[i].Data, crafttest.Encap{Kind: crafttest.EncapVXLAN, VNI: 7})
		}
	}
	write("vxlan.pcap", fs, err)
	peers(craft.Endpoints(4, false))
	exchangeGUIDs(4)
	addrs = append(addrs, crafttest.OuterSrc4, crafttest.OuterDst4)

	// Upper layers whose private data holds addresses, NIDs and port
	// identifiers (all between the endpoints of exchange 0).
	for _, u := range []struct {
		name string
		tr   craft.Transport
	}{{"rds", craft.RoCEv2}, {"lustre-o2iblnd", craft.RoCEv2}, {"sdp", craft.RoCEv2}, {"srp", craft.InfiniBand}} {
		fs, err := craft.ULPExchange(u.name, u.tr, false, false, 2)
		write(u.name+".pcap", fs, err)
	}
	a, b = craft.Endpoints(0, false)
	guids = append(guids, 0x0002c90300000000|uint64(a.LID), 0x0002c90300000000|uint64(b.LID)) // SRP's port identifiers

	// A REJ (reason 12, Primary Remote Port GID rejected) naming, in its
	// Additional Reject Information, a GID that nothing else shows.
	a, b = craft.Endpoints(5, false)
	ari := netip.MustParseAddr("fe80::2:c903:b:7")
	rej := &layers.CMRej{LocalCommID: 0x0b000099, RemoteCommID: 0x0a000099, Reason: 12, RejectInfoLength: 16}
	copy(rej.ARI[:], ari.AsSlice())
	cm := craft.CM{Transport: craft.RoCEv2, Src: b, Dst: a, Msg: rej, TID: 0x99}
	data, link, err := cm.Frame()
	write("rej.pcap", []craft.Frame{{Data: data, Time: craft.DefaultStart, LinkType: link}}, err)
	peers(a, b)
	addrs = append(addrs, ari)
	return files, addrs, guids, macs
}

// forms are the ways the output could show an address, a GUID or a MAC:
// as text, and as octets in hex (a JSON hex string, a hex dump).
func forms(addrs []netip.Addr, guids []uint64, macs [][]byte) []string {
	var out []string
	octets := func(b []byte) {
		out = append(out, hex.EncodeToString(b))
		var sp []string
		for _, o := range b {
			sp = append(sp, fmt.Sprintf("%02x", o))
		}
		out = append(out, strings.Join(sp, " "))
	}
	for _, a := range addrs {
		out = append(out, a.String(), a.StringExpanded())
		if a.Is4() {
			v4 := a.As4()
			out = append(out, netip.AddrFrom16(a.As16()).String(), fmt.Sprintf("::ffff:%x:%x", binary.BigEndian.Uint16(v4[:2]), binary.BigEndian.Uint16(v4[2:])))
			octets(v4[:])
			octets([]byte{v4[3], v4[2], v4[1], v4[0]})
		} else {
			octets(a.AsSlice())
		}
	}
	for _, g := range guids {
		out = append(out, fmt.Sprintf("0x%016x", g))
		octets(binary.BigEndian.AppendUint64(nil, g))
	}
	for _, m := range macs {
		var colons []string
		for _, o := range m {
			colons = append(colons, fmt.Sprintf("%02x", o))
		}
		out = append(out, strings.Join(colons, ":"))
		octets(m)
	}
	return out
}

// TestAnonymize dissects captures full of addresses with --anonymize in
// every format: no address, GID, GUID or MAC of the input is left in any
// form, each got one name everywhere, and the outputs are golden files.
func TestAnonymize(t *testing.T) {
	files, addrs, guids, macs := anonInputs(t)
	// The inputs hold what the test looks for.
	plain := string(renderDP(t, output.Options{Format: output.JSON}, datapath.ModeFindings, files...))
	for _, s := range []string{"192.0.2.1", "2001:db8::d", "fe80::2:c903:a:1", "198.51.100.1", "0x0002c90300000001",
		"192.0.2.1@o2ib", "fe800000000000000002c903000b0007"} {
		if !strings.Contains(plain, s) {
			t.Fatalf("the input shows no %s without --anonymize", s)
		}
	}
	cmd := "rdmacm-pd dissect --anonymize -Y 'not addr == 192.0.2.200' " + strings.Join(base(files), " ")
	cases := []struct {
		name string
		opts output.Options
	}{
		{"anonymized-V.txt", output.Options{Format: output.Text, Verbose: true, Hex: true, MultiFile: true}},
		{"anonymized.json", output.Options{Format: output.JSON, MultiFile: true}},
		{"anonymized.md", output.Options{Format: output.Markdown, MultiFile: true, Version: testTool, Command: cmd,
			Details: output.DetailsAll, Budget: -1}},
	}
	outs := map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Anonymize = true
			if tc.opts.Version == "" {
				tc.opts.Version = testTool
			}
			out := string(renderDP(t, tc.opts, datapath.ModeFindings, files...))
			for _, f := range forms(addrs, guids, macs) {
				if strings.Contains(out, f) {
					t.Errorf("%q is in the output", f)
				}
			}
			for _, want := range []string{"host1", "host2", "gid1", "guid1"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %s in the output", want)
				}
			}
			outs[tc.name] = out
			golden(t, tc.name, []byte(out))
		})
	}
	if strings.Contains(outs["anonymized.md"], "192.0.2.200") || !strings.Contains(outs["anonymized.md"], "not addr == host") {
		t.Errorf("the command line keeps its address")
	}
	sameNames(t, outs)
}

// base are the files' base names.
func base(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, filepath.Base(f))
	}
	return out
}

// sameNames checks that an address has one name everywhere: in the JSON,
// a connection's endpoints are its REQ's, and a REQ's IP CM header and
// GIDs name its endpoints; the text and the Markdown show each message
// between the endpoints the JSON names.
func sameNames(t *testing.T, outs map[string]string) {
	t.Helper()
	type msg struct {
		Record, File, Message, Src, Dst string
		Frame                           int
		Initiator, Responder            string
		RequestFrame                    int `json:"request_frame"`
		CM                              map[string]any
		IPCM                            map[string]any `json:"ip_cm"`
	}
	reqs := map[string]msg{}
	var all []msg
	sc := bufio.NewScanner(strings.NewReader(outs["anonymized.json"]))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m msg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		all = append(all, m)
		if m.Message == "REQ" {
			reqs[fmt.Sprint(m.File, m.Frame)] = m
		}
	}
	conns := 0
	for _, m := range all {
		switch {
		case m.Record == "connection":
			r, ok := reqs[fmt.Sprint(m.File, m.RequestFrame)]
			if ok && (r.Src != m.Initiator || r.Dst != m.Responder) {
				t.Errorf("%s: connection %s → %s, its REQ %s → %s", m.File, m.Initiator, m.Responder, r.Src, r.Dst)
			}
			conns++
		case m.Message == "REQ" && m.IPCM != nil:
			if m.IPCM["src"] != m.Src || m.IPCM["dst"] != m.Dst {
				t.Errorf("%s: REQ %s → %s, its IP CM header %v → %v", m.File, m.Src, m.Dst, m.IPCM["src"], m.IPCM["dst"])
			}
			if m.CM["primary_local_gid"] != m.Src || m.CM["primary_remote_gid"] != m.Dst {
				t.Errorf("%s: REQ %s → %s, its GIDs %v → %v", m.File, m.Src, m.Dst, m.CM["primary_local_gid"], m.CM["primary_remote_gid"])
			}
		}
		if m.Record != "message" {
			continue
		}
		// The text's message line, and the Markdown's details.
		line := regexp.MustCompile(fmt.Sprintf(`(?m)^ +%d  .* %s +%s → %s\b`, m.Frame, regexp.QuoteMeta(m.Message),
			regexp.QuoteMeta(m.Src), regexp.QuoteMeta(m.Dst)))
		if !line.MatchString(outs["anonymized-V.txt"]) {
			t.Errorf("text: no line of frame %d %s %s → %s", m.Frame, m.Message, m.Src, m.Dst)
		}
		title := regexp.MustCompile(fmt.Sprintf(`<summary>%s frame %d( \(connection \d+\))?: %s %s → %s,`, regexp.QuoteMeta(m.File),
			m.Frame, regexp.QuoteMeta(m.Message), regexp.QuoteMeta(m.Src), regexp.QuoteMeta(m.Dst)))
		if !title.MatchString(outs["anonymized.md"]) {
			t.Errorf("markdown: no details of %s frame %d %s %s → %s", m.File, m.Frame, m.Message, m.Src, m.Dst)
		}
	}
	if conns == 0 || len(reqs) == 0 {
		t.Errorf("%d connections, %d REQs in the JSON", conns, len(reqs))
	}
}

// TestAnonymizeUpdates: a connection's update (live capture, a state
// limit) names its endpoints as its record does, in every format.
func TestAnonymizeUpdates(t *testing.T) {
	path := recordsFirst(t, 3)
	for _, tc := range []struct {
		opts output.Options
		cfg  dissect.Config
		want string
	}{
		{output.Options{Format: output.Text, Live: true}, dissect.Config{Live: true}, "connection host1 → host2, after its record:"},
		{output.Options{Format: output.Text, Quiet: true}, dissect.Config{MaxConnections: 1}, "host1 → host2"},
		{output.Options{Format: output.JSON, Quiet: true}, dissect.Config{MaxConnections: 1}, `"record":"connection_update"`},
		{output.Options{Format: output.Markdown, Version: "v", Command: "x"}, dissect.Config{MaxConnections: 1}, "| 1 | host1 → host2 |"},
	} {
		var out bytes.Buffer
		tc.opts.Anonymize = true
		r, err := output.New(&out, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dissect.Run(context.Background(), []string{path}, nil, tc.cfg, r); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if s := out.String(); strings.Contains(s, "192.0.2.") || !strings.Contains(s, tc.want) {
			t.Errorf("%s: an address is left, or no %q:\n%s", tc.opts.Format, tc.want, s)
		}
	}
}
