package cmd

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect"
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
	s.see(rec.Findings)
	if next, ok := s.next.(dissect.RPCSink); ok {
		return next.RPC(rec)
	}
	return nil
}
