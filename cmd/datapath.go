package cmd

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// datapathFlag is --datapath: all, findings (the default) or off.
func datapathFlag(v *datapath.Mode) *choice[datapath.Mode] {
	*v = datapath.ModeFindings
	return &choice[datapath.Mode]{v: v, word: datapath.ModeFindings.String(), noun: "value",
		words: []string{"all", "findings", "off"}, parse: datapath.ParseMode}
}

// RPC passes an "rpc" record on, counting its findings for --fail-on.
func (s *severityCounter) RPC(rec *record.RPC) error {
	s.see(rec.Findings, place{what: "frame", n: rec.Frame, rpc: true, file: rec.File})
	return s.next.RPC(rec)
}

// datapathLimitFlags registers the data path's limit flags.
func datapathLimitFlags(f *pflag.FlagSet, l *datapath.Limits) {
	sizeVar(f, &l.Connections, "max-rc-connections", datapath.DefaultConnections,
		"data path: connections whose RC traffic is followed at once, about 1.5 KB each (the least recently active is given up beyond)")
	sizeVar(f, &l.Directions, "max-rc-directions", datapath.DefaultDirections,
		"data path: directions of RC traffic without their connection setup followed at once (the least recently active is given up beyond)")
	sizeVar(f, &l.CallsPerConnection, "max-rpc-calls", datapath.DefaultCallsPerConnection,
		"data path: outstanding RPC-over-RDMA Calls tracked on one connection (with their STags)")
	sizeVar(f, &l.CallBudget, "max-rpc-calls-total", datapath.DefaultCallBudget,
		"data path: outstanding RPC-over-RDMA Calls tracked on all connections together, about 100 octets each")
	sizeVar(f, &l.HeadBuffers, "max-send-buffers", datapath.DefaultHeadBuffers,
		"data path: multi-packet Sends in progress at once whose first 2048 octets and frames are kept, about 4 KB each")
}

// datapathLimitRules are the bounds of the data path's limit flags.
func datapathLimitRules(l datapath.Limits) []flagRule {
	var rules []flagRule
	for _, f := range []struct {
		name string
		v    int
	}{{"max-rc-connections", l.Connections}, {"max-rc-directions", l.Directions}, {"max-rpc-calls", l.CallsPerConnection},
		{"max-rpc-calls-total", l.CallBudget}, {"max-send-buffers", l.HeadBuffers}} {
		rules = append(rules, flagRule{"--" + f.name, f.v < 1, fmt.Sprintf("--%s: %d (want at least 1)", f.name, f.v)})
	}
	return rules
}
