package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// runLive captures on the interfaces until -c, --duration or a signal, and
// writes the -w file alongside.
func runLive(ctx context.Context, s *IOStreams, opts liveInput, cfg dissect.Config, sink record.Sink) error {
	filter := capture.Filter{RoCEPorts: cfg.RoCEPorts, TCPPorts: opts.Ports, Hosts: opts.Hosts}
	seen := map[string]bool{}
	for _, name := range opts.Interfaces {
		if seen[name] {
			return usageError("-i %s is given twice", name)
		}
		seen[name] = true
	}
	c, err := capture.OpenLive(opts.Interfaces, capture.LiveOptions{Promisc: !opts.NoPromisc, Filter: filter, Expr: opts.Expr}, opts.Duration)
	if err != nil {
		return failure(err)
	}
	defer c.Close()
	var file *capture.LiveFile
	if opts.Write != "" {
		if file, err = c.CreateFile(opts.Write); err != nil {
			return failure(err)
		}
		cfg.Writer = file
	}
	cfg.Live, cfg.Count = true, opts.Count
	stopWith := "Ctrl-C"
	switch {
	case opts.Count > 0 && opts.Duration > 0:
		stopWith = fmt.Sprintf("%d frames, %s or Ctrl-C", opts.Count, opts.Duration)
	case opts.Count > 0:
		stopWith = fmt.Sprintf("%d frames or Ctrl-C", opts.Count)
	case opts.Duration > 0:
		stopWith = fmt.Sprintf("%s or Ctrl-C", opts.Duration)
	}
	fmt.Fprintf(s.ErrOut, "rdmacm-pd: capturing on %s (%s); stops after %s\n", strings.Join(c.Names(), ", "), capture.Backend, stopWith)
	_, runErr := dissect.RunSources(ctx, []dissect.Source{c}, cfg, sink)
	if file != nil {
		// The last frames are written out, and a failure to is an error
		// even after Ctrl-C.
		if err := file.Close(); err != nil && (runErr == nil || errors.Is(runErr, context.Canceled)) {
			runErr = err
		}
	}
	return runErr
}

// listInterfaces prints the interfaces live capture can use (-D).
func listInterfaces(s *IOStreams) error {
	ifs, err := capture.Interfaces()
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
	fmt.Fprintf(s.Out, "(capture backend: %s)\n", capture.Backend)
	return nil
}
