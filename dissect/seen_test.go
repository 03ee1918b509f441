package dissect_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// seen is what the summary says of the traffic besides connection
// messages: by transport, and the connected traffic set up out of band.
type seen struct {
	RC, UC, DC, UD, OutOfBand int
	Ports                     []uint16
}

func seenOf(tr record.Traffic) seen {
	return seen{tr.RC, tr.UC, tr.DC, tr.UD, tr.OutOfBand, tr.OutOfBandPorts}
}

// runSeen dissects frames, in this order and 10 µs apart.
func runSeen(t *testing.T, frames []craft.Frame) (*record.Summary, *collect) {
	t.Helper()
	for i := range frames {
		frames[i].Time = craft.DefaultStart.Add(time.Duration(i) * 10 * time.Microsecond)
	}
	path := filepath.Join(t.TempDir(), "t.pcap")
	if err := craft.WriteFile(path, frames); err != nil {
		t.Fatal(err)
	}
	var c collect
	sum, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{}, &c)
	if err != nil {
		t.Fatal(err)
	}
	return sum, &c
}

func noCMFrames(t *testing.T, n craft.NoCM) []craft.Frame {
	t.Helper()
	fs, err := n.Frames()
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestOutOfBand: connected traffic without CM counts as set up out of
// band after a TCP connection between the same hosts, or with one on
// perftest's port 18515 anywhere; not when the TCP connection came after
// the traffic on another port, joined other hosts on another port, or
// when CM passed between the hosts. DC and UD traffic is counted apart,
// never as set up out of band.
func TestOutOfBand(t *testing.T) {
	// craft's NoCM with a TCP exchange: 4 TCP frames, 6 RC frames (3
	// Sends, 3 Acknowledges), 4 TCP frames.
	split := func(fs []craft.Frame) (open, traffic, closing []craft.Frame) { return fs[:4], fs[4:10], fs[10:] }
	join := func(parts ...[]craft.Frame) []craft.Frame {
		var out []craft.Frame
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	nfs := func() []craft.Frame {
		fs, err := (&craft.Exchange{Transport: craft.RoCEv2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096},
			Responder: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}).NFSTraffic(craft.Traffic{})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	for _, tc := range []struct {
		name   string
		frames func() []craft.Frame
		want   seen
	}{
		{"perftest: TCP on port 18515 first", func() []craft.Frame {
			return noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC, Port: craft.PerftestPort})
		}, seen{RC: 6, OutOfBand: 6, Ports: []uint16{18515}}},
		{"another port first", func() []craft.Frame {
			return noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC, Port: 9000})
		}, seen{RC: 6, OutOfBand: 6, Ports: []uint16{9000}}},
		{"no TCP", func() []craft.Frame {
			return noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC})
		}, seen{RC: 6}},
		{"UC after port 18515", func() []craft.Frame {
			return noCMFrames(t, craft.NoCM{Kind: craft.NoCMUC, Port: craft.PerftestPort})
		}, seen{UC: 3, OutOfBand: 3, Ports: []uint16{18515}}},
		{"UD after port 18515: never set up", func() []craft.Frame {
			return noCMFrames(t, craft.NoCM{Kind: craft.NoCMUD, Port: craft.PerftestPort})
		}, seen{UD: 3}},
		{"DC", func() []craft.Frame {
			return noCMFrames(t, craft.NoCM{Kind: craft.NoCMDC})
		}, seen{DC: 6}},
		{"port 18515 only after the traffic: accompanied", func() []craft.Frame {
			open, traffic, closing := split(noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC, Port: craft.PerftestPort}))
			return join(traffic, open, closing)
		}, seen{RC: 6, OutOfBand: 6, Ports: []uint16{18515}}},
		{"another port only after the traffic", func() []craft.Frame {
			open, traffic, closing := split(noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC, Port: 9000}))
			return join(traffic, open, closing)
		}, seen{RC: 6}},
		{"another port between other hosts", func() []craft.Frame {
			open, _, closing := split(noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC, Index: 1, Port: 9000}))
			return join(open, noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC}), closing)
		}, seen{RC: 6}},
		{"port 18515 between other hosts", func() []craft.Frame {
			open, _, closing := split(noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC, Index: 1, Port: craft.PerftestPort}))
			return join(open, noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC}), closing)
		}, seen{RC: 6, OutOfBand: 6, Ports: []uint16{18515}}},
		{"CM between the hosts: not out of band", func() []craft.Frame {
			open, _, closing := split(noCMFrames(t, craft.NoCM{Kind: craft.NoCMRC, Port: 9000}))
			return join(open, nfs(), closing)
		}, seen{RC: len(nfs()) - 5}}, // the NFS traffic's frames but its REQ, REP, RTU, DREQ and DREP
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, _ := runSeen(t, tc.frames())
			if got := seenOf(sum.Traffic); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestOutOfBandReal: the real captures without CM, by what their traffic
// was: perftest's RC after its TCP exchange on port 18515, RC after a TCP
// exchange on port 9000 between the same hosts, DC (the Reliable Datagram
// opcodes), UC and RC with no sign of their setup.
func TestOutOfBandReal(t *testing.T) {
	for name, want := range map[string]seen{
		"ib_send_bw_over_roce.pcap": {RC: 10, OutOfBand: 10, Ports: []uint16{18515}},
		"proxy-roce.pcap":           {RC: 105, OutOfBand: 105, Ports: []uint16{9000}},
		"dc_dc-small.pcap":          {DC: 19},
		"uc_uc_sg_send_uc-sg.pcap":  {UC: 17},
		"dc_rc-small.pcap":          {RC: 21},
		// rdma_cm on port 18515 (a Service ID, no TCP): its traffic had
		// CM, none of it is out of band.
		"rdma-ib-tutorial-rdma_cm.pcap": {RC: 84},
	} {
		t.Run(name, func(t *testing.T) {
			p := realCapture(t, name)
			var c collect
			sum, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{}, &c)
			if err != nil {
				t.Fatal(err)
			}
			if got := seenOf(sum.Traffic); !reflect.DeepEqual(got, want) {
				t.Errorf("%+v, want %+v", got, want)
			}
		})
	}
}

// TestAbsentOncePerConnection: on the rdma_cm tutorial's two connections
// (port 18515, no private data, traffic that is not RPC-over-RDMA),
// rpcrdma-absent comes once per connection, on its REQ, and the traffic
// shows it is not RPC-over-RDMA.
func TestAbsentOncePerConnection(t *testing.T) {
	p := realCapture(t, "rdma-ib-tutorial-rdma_cm.pcap")
	var c collect
	sum, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{}, &c)
	if err != nil {
		t.Fatal(err)
	}
	if n := sum.Findings[finding.RPCRDMAAbsent]; n != 2 || len(c.conns) != 2 {
		t.Errorf("%d rpcrdma-absent on %d connections, want 2 on 2", n, len(c.conns))
	}
	for _, m := range c.msgs {
		has := len(codes(m.Findings)) > 0 && codes(m.Findings)[0] == "rpcrdma-absent"
		if has != (m.Kind == record.KindREQ) {
			t.Errorf("frame %d %s: findings %v", m.Frame, m.Name(), codes(m.Findings))
		}
	}
	for _, cn := range c.conns {
		if !cn.RPCRDMARules || cn.ULP != "" || !cn.TrafficNotRPCRDMA() {
			t.Errorf("connection %d: rules %v, ulp %q, datapath %+v: want its traffic not RPC-over-RDMA",
				cn.Number, cn.RPCRDMARules, cn.ULP, cn.Datapath)
		}
	}
}
