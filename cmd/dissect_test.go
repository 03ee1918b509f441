package cmd

import (
	"bytes"
	"context"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/ipfrag"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// TestDissectFlagsWired: each of dissect's flags lands in its group of
// dissectOptions, seen through a runF of the test's own, as cli/cli's tests
// see their commands' options, without running anything.
func TestDissectFlagsWired(t *testing.T) {
	args := []string{"a.pcap", "-r", "b.pcap", "c.pcap", "-c", "3", "-w", "out.pcapng", "--roce-port", "5000,5001",
		"--datapath", "all", "--sha256",
		"-T", "markdown", "-V", "-x", "--color", "never", "-q", "-Y", "msg == REQ", "-t", "u", "--width", "40",
		"--details", "all", "--budget", "100", "--basename",
		"--max-stream-bytes", "100", "--max-buffer-bytes", "1000", "--max-tcp-flows", "2", "--max-ip-fragments", "3",
		"--max-ip-fragment-bytes", "4", "--ip-fragment-timeout", "5s", "--max-connections", "6", "--max-rc-connections", "7",
		"--max-rc-directions", "8", "--max-rpc-calls", "9", "--max-rpc-calls-total", "10", "--max-send-buffers", "11",
		"-i", "eth0", "-i", "eth1", "--no-promisc", "--port", "20049", "--host", "192.0.2.1", "-f", "tcp", "--duration", "9s", "-D",
		"--fail-on", "warning"}
	var got *dissectOptions
	c := dissectCmd(&IOStreams{Args: args}, func(_ context.Context, _ *IOStreams, opts *dissectOptions) error {
		got = opts
		return nil
	})
	c.SetArgs(args)
	if err := c.Execute(); err != nil || got == nil {
		t.Fatalf("execute: %v", err)
	}
	if !got.Changed("width") || !got.Changed("display-filter") || got.Changed("help") {
		t.Errorf("Changed does not say which flags were given")
	}
	got.Changed = nil
	want := &dissectOptions{
		Input: inputOptions{Files: []string{"a.pcap", "b.pcap", "c.pcap"}, Count: 3, Write: "out.pcapng",
			RoCEPorts: []uint16{5000, 5001}, Datapath: datapath.ModeAll, SHA256: true},
		Show: showOptions{Format: output.Markdown, Verbose: true, Hex: true, Color: output.ColorNever, Quiet: true,
			Select: "msg == REQ", Time: output.TimeUTC, Width: 40, Details: output.DetailsAll, Budget: 100, Basename: true, Progress: string(progressAuto)},
		Limits: limitOptions{TCP: reassembly.Options{StreamBytes: 100, TotalBytes: 1000, Flows: 2},
			IPFrag:         ipfrag.Options{Fragments: 3, Bytes: 4, Timeout: 5 * time.Second},
			MaxConnections: 6,
			Datapath:       datapath.Limits{Connections: 7, Directions: 8, CallsPerConnection: 9, CallBudget: 10, HeadBuffers: 11}},
		Live: liveOptions{Interfaces: []string{"eth0", "eth1"}, NoPromisc: true, Ports: []uint16{20049},
			Hosts: []netip.Addr{netip.MustParseAddr("192.0.2.1")}, Expr: "tcp", Duration: 9 * time.Second, List: true},
		FailOn: finding.Warning,
		Args:   args,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", *got, *want)
	}
}

// TestRunDissectWithoutCobra: runDissect is a plain function: called with
// the options the flags make (Changed nil: no flag given) and streams over
// buffers, it writes what the program writes.
func TestRunDissectWithoutCobra(t *testing.T) {
	var opts *dissectOptions
	c := dissectCmd(&IOStreams{}, func(_ context.Context, _ *IOStreams, o *dissectOptions) error {
		opts = o
		return nil
	})
	c.SetArgs([]string{"-T", "json", nfs})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	opts.Changed = nil
	var out, errOut bytes.Buffer
	err := runDissect(context.Background(), &IOStreams{Out: &out, ErrOut: &errOut, Getenv: func(string) string { return "" }}, opts)
	code, wantOut, wantErr := run(t, nil, nil, false, "dissect", "-T", "json", nfs)
	if exitCode(err) != code || out.String() != wantOut || errOut.String() != wantErr {
		t.Errorf("runDissect: %v, stdout %.200q, stderr %q; Run: exit %d, stdout %.200q", err, out.String(), errOut.String(),
			code, wantOut)
	}
}
