package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/live"
)

// runLive captures on the interfaces until -c, --duration or a signal, and
// writes the -w file alongside.
func runLive(ctx context.Context, s *IOStreams, opts *dissectOptions, cfg dissect.Config, sink dissect.Sink) error {
	filter := live.Filter{RoCEPorts: cfg.RoCEPorts}
	for _, p := range opts.Ports {
		if p == 0 || p > 65535 {
			return usageError("--port: %d is not a TCP port", p)
		}
		if !slices.Contains(filter.TCPPorts, uint16(p)) {
			filter.TCPPorts = append(filter.TCPPorts, uint16(p))
		}
	}
	for _, h := range opts.Hosts {
		a, err := netip.ParseAddr(h)
		if err != nil {
			return usageError("--host: %q is not an IP address", h)
		}
		filter.Hosts = append(filter.Hosts, a.Unmap())
	}
	seen := map[string]bool{}
	for _, name := range opts.Interfaces {
		if seen[name] {
			return usageError("-i %s is given twice", name)
		}
		seen[name] = true
	}
	if opts.Write == "-" {
		return usageError("-w -: standard output carries the report; give -w a file name")
	}
	lo := live.Options{Promisc: !opts.NoPromisc, Filter: filter, Expr: opts.Expr}
	var sources []dissect.LiveSource
	var names []string
	var links []uint16
	closeAll := func() {
		for _, src := range sources {
			src.Close()
		}
	}
	for _, name := range opts.Interfaces {
		h, err := live.Open(name, lo)
		if err != nil {
			closeAll()
			return failure(err)
		}
		sources = append(sources, h)
		names = append(names, h.Name())
		links = append(links, h.LinkType())
	}
	lopts := dissect.LiveOptions{Count: opts.Count, Duration: opts.Duration,
		IsTimeout: func(err error) bool { return errors.Is(err, live.ErrTimeout) }}
	var file *os.File
	var w *live.Writer
	if opts.Write != "" {
		pcapng := !strings.HasSuffix(strings.ToLower(opts.Write), ".pcap")
		// Refuse before the file is created, which would empty it.
		err := live.CanWrite(pcapng, links)
		if err == nil {
			file, err = os.Create(opts.Write)
		}
		if err != nil {
			closeAll()
			return failure(fmt.Errorf("%s: %w", opts.Write, err))
		}
		if w, err = live.NewWriter(file, pcapng, names, links, 0); err != nil {
			file.Close()
			closeAll()
			return failure(fmt.Errorf("%s: %w", opts.Write, err))
		}
		lopts.Write, lopts.Flush = w.Write, w.Flush
	}
	stopWith := "Ctrl-C"
	switch {
	case opts.Count > 0 && opts.Duration > 0:
		stopWith = fmt.Sprintf("%d frames, %s or Ctrl-C", opts.Count, opts.Duration)
	case opts.Count > 0:
		stopWith = fmt.Sprintf("%d frames or Ctrl-C", opts.Count)
	case opts.Duration > 0:
		stopWith = fmt.Sprintf("%s or Ctrl-C", opts.Duration)
	}
	fmt.Fprintf(s.ErrOut, "rdmacm-pd: capturing on %s (%s); stops after %s\n", strings.Join(names, ", "), live.Backend, stopWith)
	_, runErr := dissect.RunLive(ctx, sources, cfg, lopts, sink)
	if w != nil {
		err := w.Flush()
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("%s: %w", opts.Write, err)
		}
	}
	return runErr
}

// listInterfaces prints the interfaces live capture can use (-D).
func listInterfaces(s *IOStreams) error {
	ifs, err := live.Interfaces()
	if err != nil {
		return failure(err)
	}
	for i, it := range ifs {
		state := "down"
		if it.Up {
			state = "up"
		}
		var extra []string
		if it.Loopback {
			extra = append(extra, "loopback")
		}
		if it.Description != "" {
			extra = append(extra, it.Description)
		}
		extra = append(extra, it.Addresses...)
		fmt.Fprintf(s.Out, "%d. %s (%s) %s\n", i+1, it.Name, state, strings.Join(extra, " "))
	}
	fmt.Fprintf(s.Out, "(capture backend: %s)\n", live.Backend)
	return nil
}
