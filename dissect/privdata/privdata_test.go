package privdata

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The RFC 8797 step on its own: where the message is looked for, which
// occurrence a receiver uses, and what is said of the others. The
// expectations are worked out from RFC 8797
// (draft-ietf-nfsv4-rpcrdma-cm-pvt-data-08), section 4: an 8-octet message,
// Format Identifier f6ab0e18, Version, an octet of 7 Reserved bits (senders
// zero them, receivers ignore them) and R (its lowest bit), Send Size and
// Receive Size encoded as (value + 1) * 1024; other layers may put their
// headers first, so it is looked for at every offset, and a receiver uses
// it only when its Version is 1 and all 8 octets are inside the private
// data. Without it a peer counts as R = 0 and 1024-octet sizes (RFC 8166,
// section 3.3.3).

// octets reads hex written with spaces and line breaks, each line's
// comment after "//" left out.
func octets(s string) []byte {
	var h strings.Builder
	for line := range strings.Lines(s) {
		line, _, _ = strings.Cut(line, "//")
		h.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(h.String())
	if err != nil {
		panic(err)
	}
	return b
}

// pad fills b with zeros up to n octets: IB CM private data is a fixed
// area, zero-filled after what the consumer put there.
func pad(b []byte, n int) []byte {
	return append(b, make([]byte, n-len(b))...)
}

// cat joins octet strings.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// ipcmHeader is an IP CM header (IBTA Annex A11) for 192.0.2.1:50000 →
// 192.0.2.2, the 36 octets an IP-addressed rdma_cm REQ puts first.
var ipcmHeader = octets(`
	00 40 c3 50                               // version 0.0, IPv4, source port 50000
	00000000 00000000 0000ffff c0000201       // source 192.0.2.1 (IPv4-mapped)
	00000000 00000000 0000ffff c0000202       // destination 192.0.2.2`)

// Fixed private data sizes of the CM messages (IBTA Vol 1, chapter 12).
const (
	reqPD = 92
	repPD = 196
	rejPD = 148
	rtuPD = 224
)

// Carriers as the decoder describes them.
var (
	reqIPCM = Carrier{Name: "REQ", Where: "an IP CM header", Expected: 36, Size: reqPD, AbsentMatters: true}
	rep     = Carrier{Name: "REP", Where: "the REP", Expected: 0, Size: repPD, AbsentMatters: true}
	rej     = Carrier{Name: "REJ", Where: "the REJ", Expected: 0, Size: rejPD, AbsentMatters: true}
	rtu     = Carrier{Name: "RTU", Where: "the RTU", Expected: 0, Size: rtuPD}
)

// mpa is the carrier of an MPA frame of revision rev with pdLen octets of
// private data.
func mpa(name string, rev, pdLen int) Carrier {
	c := Carrier{Name: name, Where: "MPA revision 1", Size: pdLen, AbsentMatters: true}
	if rev == 2 {
		c.Where, c.Expected = "MPA revision 2", 4
	}
	return c
}

// want is a finding expected: its code, and the part of its message that
// carries the values (the whole message where it is short).
type want struct {
	code finding.Code
	msg  string
}

func checkFindings(t *testing.T, got []finding.Finding, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Errorf("%d findings, want %d:", len(got), len(wants))
		for _, f := range got {
			t.Errorf("  %s: %s", f.Code, f.Message)
		}
		return
	}
	for i, w := range wants {
		if got[i].Code != w.code || !strings.Contains(got[i].Message, w.msg) {
			t.Errorf("finding %d: %s %q, want %s containing %q", i, got[i].Code, got[i].Message, w.code, w.msg)
		}
		if got[i].Severity != w.code.Check().Severity || got[i].Reference != w.code.Check().Reference {
			t.Errorf("finding %d: severity %v, reference %q are not the catalogue's", i, got[i].Severity, got[i].Reference)
		}
	}
}

// message is the record of a usable RFC 8797 message found at off: the
// sizes decoded as (value + 1) * 1024.
func message(off int, r bool, send, recv uint8) *record.RPCRDMA {
	return &record.RPCRDMA{Offset: off, FormatIdentifier: 0xf6ab0e18, Version: 1, RemoteInvalidate: r,
		SendSize: (int(send) + 1) * 1024, ReceiveSize: (int(recv) + 1) * 1024, SendSizeEncoded: send, ReceiveSizeEncoded: recv}
}

const absentREP = "no usable RPC-over-RDMA private data in REP: this peer counts as Send Size 1024, Receive Size 1024, R=0"

func TestCheck(t *testing.T) {
	reserved := message(0, true, 3, 3)
	reserved.Reserved = 0x01
	reservedNoR := message(0, false, 0, 0)
	reservedNoR.Reserved = 0x7f
	ten := make([]byte, 0, 80)
	for range 10 {
		ten = append(ten, octets("f6ab0e18 01 00 03 03")...)
	}
	for _, tc := range []struct {
		name    string
		pd      []byte
		carrier Carrier
		want    *record.RPCRDMA
		finds   []want
	}{
		{name: "REP, at offset 0",
			// f6ab0e18 identifier, Version 1, R set, Send Size 3 (4096),
			// Receive Size 3 (4096): what Linux clients send.
			pd: pad(octets("f6ab0e18 01 01 03 03"), repPD), carrier: rep, want: message(0, true, 3, 3)},
		{name: "REQ, behind the IP CM header",
			// R clear; the smallest and the largest size: 0x00 is 1024,
			// 0xff is 256 * 1024 = 262144.
			pd: pad(cat(ipcmHeader, octets("f6ab0e18 01 00 00 ff")), reqPD), carrier: reqIPCM, want: message(36, false, 0, 0xff)},
		{name: "MPA revision 2, after IRD/ORD",
			// IRD 16, ORD 8, then Send Size 7 (8192), Receive Size 15 (16384).
			pd: octets("0010 0008 f6ab0e18 01 01 07 0f"), carrier: mpa("MPA_REQ", 2, 12), want: message(4, true, 7, 15)},
		{name: "REQ, 4 octets after where the IP CM header puts it",
			pd:      pad(cat(ipcmHeader, octets("00000000 f6ab0e18 01 01 03 03")), reqPD),
			carrier: reqIPCM, want: message(40, true, 3, 3),
			finds: []want{{finding.RPCRDMAUnexpectedOffset, "RPC-over-RDMA message at offset 40, where an IP CM header puts it at 36: possibly a chance match"}}},
		{name: "REQ, at offset 0 where an IP CM header belongs",
			pd: pad(octets("f6ab0e18 01 01 03 03"), reqPD), carrier: reqIPCM, want: message(0, true, 3, 3),
			finds: []want{{finding.RPCRDMAUnexpectedOffset, "at offset 0, where an IP CM header puts it at 36"}}},
		{name: "Version 2 alone: ignored, so absent",
			pd: pad(octets("f6ab0e18 02 01 03 03"), repPD), carrier: rep,
			finds: []want{{finding.RPCRDMAAbsent, absentREP},
				{finding.RPCRDMAVersionUnknown, "Format Identifier with Version 2 at offset 0: ignored"}}},
		{name: "Version 0, then a usable one: the later match is the one used",
			// Send and Receive Size 1: 2048.
			pd: pad(octets("f6ab0e18 00 00 00 00  f6ab0e18 01 00 01 01"), repPD), carrier: rep, want: message(8, false, 1, 1),
			finds: []want{{finding.RPCRDMAVersionUnknown, "Version 0 at offset 0"},
				{finding.RPCRDMAMultiple, "Format Identifier found 2 times (offsets 0, 8)"},
				{finding.RPCRDMAUnexpectedOffset, "at offset 8, where the REP puts it at 0"}}},
		{name: "a usable one, then Version 2: only those before the used one are judged",
			pd: pad(octets("f6ab0e18 01 00 03 03  f6ab0e18 02 00 00 00"), repPD), carrier: rep, want: message(0, false, 3, 3),
			finds: []want{{finding.RPCRDMAMultiple, "found 2 times (offsets 0, 8)"}}},
		{name: "5 octets left after the identifier: truncated, though its Version is 1",
			pd: cat(make([]byte, 143), octets("f6ab0e18 01")), carrier: rej,
			finds: []want{{finding.RPCRDMAAbsent, "no usable RPC-over-RDMA private data in REJ"},
				{finding.RPCRDMATruncated, "Format Identifier too close to the end of the private data at offset 143 (5 octets left)"}}},
		{name: "4 octets left: no Version at all",
			pd: cat(make([]byte, 8), octets("f6ab0e18")), carrier: mpa("MPA_REP", 1, 12),
			finds: []want{{finding.RPCRDMAAbsent, "no usable RPC-over-RDMA private data in MPA_REP"},
				{finding.RPCRDMATruncated, "at offset 8 (4 octets left)"}}},
		{name: "Version unknown and truncated: absent first, then in catalogue order",
			// Version 2 at 0, and an identifier 7 octets before the end of
			// the REP's 196.
			pd: cat(pad(octets("f6ab0e18 02 00 00 00"), 189), octets("f6ab0e18 01 00 00")), carrier: rep,
			finds: []want{{finding.RPCRDMAAbsent, absentREP},
				{finding.RPCRDMAVersionUnknown, "Version 2 at offset 0"},
				{finding.RPCRDMATruncated, "at offset 189 (7 octets left)"},
				{finding.RPCRDMAMultiple, "found 2 times (offsets 0, 189)"}}},
		{name: "the capture cut the private data: neither absent nor truncated can be told",
			pd: cat(make([]byte, 64), octets("f6ab0e18 01 01")), carrier: rep},
		{name: "the capture cut it before any identifier",
			pd: make([]byte, 40), carrier: rep},
		{name: "an RTU without the message: its absence is not worth saying",
			pd: make([]byte, rtuPD), carrier: rtu},
		{name: "an empty MPA private data",
			pd: nil, carrier: mpa("MPA_REP", 1, 0),
			finds: []want{{finding.RPCRDMAAbsent, "no usable RPC-over-RDMA private data in MPA_REP: this peer counts as Send Size 1024, Receive Size 1024, R=0"}}},
		{name: "Reserved bit 1 set beside R: used as it is, R read from bit 0",
			pd: pad(octets("f6ab0e18 01 03 03 03"), repPD), carrier: rep, want: reserved,
			finds: []want{{finding.RPCRDMAReservedNonzero, "Reserved bits are 0x01 (octet 5 is 0x03)"}}},
		{name: "all Reserved bits set, R clear",
			pd: pad(octets("f6ab0e18 01 fe 00 00"), repPD), carrier: rep, want: reservedNoR,
			finds: []want{{finding.RPCRDMAReservedNonzero, "Reserved bits are 0x7f (octet 5 is 0xfe)"}}},
		{name: "ten messages in a row: eight offsets listed",
			pd: pad(ten, repPD), carrier: rep, want: message(0, false, 3, 3),
			finds: []want{{finding.RPCRDMAMultiple, "Format Identifier found 10 times (offsets 0, 8, 16, 24, 32, 40, 48, 56, ...)"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fs := Check(tc.pd, tc.carrier)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("message %+v, want %+v", got, tc.want)
			}
			checkFindings(t, fs, tc.finds)
		})
	}
}

// Blob checks pasted private data as if a REQ carried it: the whole of it
// was captured, and absence is worth saying.
func TestBlob(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pd       []byte
		expected int
		want     *record.RPCRDMA
		finds    []want
	}{
		{"at the offset given", cat(ipcmHeader, octets("f6ab0e18 01 01 03 03")), 36, message(36, true, 3, 3), nil},
		{"elsewhere", octets("0000 0000 0000 0000 f6ab0e18 01 00 1f 1f"), 0, message(8, false, 0x1f, 0x1f),
			[]want{{finding.RPCRDMAUnexpectedOffset, "RPC-over-RDMA message at offset 8, where its carrier puts it at 0"}}},
		{"none", octets("0102030405060708"), 0, nil,
			[]want{{finding.RPCRDMAAbsent, "no usable RPC-over-RDMA message in the private data: this peer counts as Send Size 1024, Receive Size 1024, R=0"}}},
		{"cut short: a blob is all there is, so it is truncated", octets("f6ab0e18 01 01 03"), 0, nil,
			[]want{{finding.RPCRDMAAbsent, "no usable RPC-over-RDMA message in the private data"},
				{finding.RPCRDMATruncated, "at offset 0 (7 octets left)"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fs := Blob(tc.pd, tc.expected)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("message %+v, want %+v", got, tc.want)
			}
			checkFindings(t, fs, tc.finds)
		})
	}
}

func TestAbsentFinding(t *testing.T) {
	f := AbsentFinding("no usable RPC-over-RDMA private data in MPA_REQ")
	if f.Code != finding.RPCRDMAAbsent || f.Severity != finding.Info ||
		f.Message != "no usable RPC-over-RDMA private data in MPA_REQ: this peer counts as Send Size 1024, Receive Size 1024, R=0" ||
		!strings.Contains(f.Reference, "RFC 8797") {
		t.Errorf("%+v", f)
	}
}

// Examine holds rpcrdma-absent apart (the connection rules decide whether it
// applies), and reads the private data as another upper layer's only when no
// usable RFC 8797 message is there.
func TestExamine(t *testing.T) {
	nvmeReq := octets("0000 0000 2000 1f00 0000") // NVMe-oF RDMA_CM_REQUEST: admin queue, HRQSIZE 32, HSQSIZE 31
	nvmePort := Context{Role: RoleRequest, Consumer: 36, ServiceID: 0x0000000001061144, HasServiceID: true}
	t.Run("RFC 8797 message: no upper layer read", func(t *testing.T) {
		pd := pad(cat(ipcmHeader, octets("f6ab0e18 01 01 03 03")), reqPD)
		r := Examine(pd, reqIPCM, nvmePort)
		if !reflect.DeepEqual(r.RPCRDMA, message(36, true, 3, 3)) || r.Absent != nil || r.ULP != nil || len(r.Findings) != 0 {
			t.Errorf("%+v", r)
		}
	})
	t.Run("absent, NVMe-oF read instead", func(t *testing.T) {
		pd := pad(cat(ipcmHeader, nvmeReq), reqPD)
		r := Examine(pd, reqIPCM, nvmePort)
		if r.RPCRDMA != nil || r.Absent == nil || r.Absent.Code != finding.RPCRDMAAbsent ||
			r.Absent.Message != "no usable RPC-over-RDMA private data in REQ: this peer counts as Send Size 1024, Receive Size 1024, R=0" {
			t.Errorf("absent %+v", r.Absent)
		}
		if r.ULP == nil || r.ULP.Protocol != record.ULPNVMeRDMA || r.ULP.Offset != 36 || r.ULP.Evidence != record.EvidencePrivateData {
			t.Errorf("ulp %+v", r.ULP)
		}
		checkFindings(t, r.Findings, nil)
	})
	t.Run("the RFC 8797 step's findings come before the upper layer's", func(t *testing.T) {
		// An NVMe-oF request with RECFMT 1, and an identifier of Version 9
		// in its reserved octets.
		pd := pad(cat(ipcmHeader, octets("0100 0000 2000 1f00 0000 0000"), octets("f6ab0e18 09 00 00 00")), reqPD)
		r := Examine(pd, reqIPCM, nvmePort)
		if r.Absent == nil {
			t.Error("no rpcrdma-absent held")
		}
		checkFindings(t, r.Findings, []want{{finding.RPCRDMAVersionUnknown, "Version 9 at offset 48"},
			{finding.ULPPrivateDataInvalid, "NVMe-oF (Service ID port 4420): RECFMT is 1, not 0"}})
	})
	t.Run("private data the capture cut is not too short for its layout", func(t *testing.T) {
		pd := cat(ipcmHeader, nvmeReq[:6]) // 42 of the REQ's 92 octets captured
		r := Examine(pd, reqIPCM, nvmePort)
		if r.Absent != nil || r.ULP == nil || r.ULP.Problem != "" || len(r.Findings) != 0 {
			t.Errorf("%+v", r)
		}
		// The whole private data, as short on the wire: the sender's fault.
		short := reqIPCM
		short.Size = len(pd)
		r = Examine(pd, short, nvmePort)
		checkFindings(t, r.Findings, []want{{finding.ULPPrivateDataInvalid,
			"NVMe-oF (Service ID port 4420): 6 octets of private data, the RDMA_CM_REQUEST private data needs 10"}})
	})
}

// Hold puts the held rpcrdma-absent where the step's findings start, so that
// once the connection rules release it, it comes before them.
func TestHold(t *testing.T) {
	early := finding.New(finding.CMNotGSI, "before the private data step")
	pd := pad(octets("f6ab0e18 03 00 00 00"), repPD) // Version 3: ignored, so absent
	r := Examine(pd, rep, Context{Role: RoleAccept})
	m := &record.Message{Findings: []finding.Finding{early}}
	r.Hold(m, len(m.Findings))
	m.Findings = append(m.Findings, r.Findings...)
	if len(m.Held) != 1 || m.Held[0].At != 1 || m.Held[0].Finding != *r.Absent {
		t.Fatalf("held %+v", m.Held)
	}
	m.Release()
	var codes []finding.Code
	for _, f := range m.Findings {
		codes = append(codes, f.Code)
	}
	if !reflect.DeepEqual(codes, []finding.Code{finding.CMNotGSI, finding.RPCRDMAAbsent, finding.RPCRDMAVersionUnknown}) {
		t.Errorf("released %v", codes)
	}

	// Nothing held when the message is there, or its absence cannot be told.
	for _, pd := range [][]byte{pad(octets("f6ab0e18 01 00 00 00"), repPD), make([]byte, 10)} {
		r := Examine(pd, rep, Context{Role: RoleAccept})
		m := &record.Message{}
		r.Hold(m, 0)
		if m.Held != nil {
			t.Errorf("held %+v", m.Held)
		}
	}
}
