package output

import "github.com/rdmacm-pd/rdmacm-pd/dissect/record"

// Totals is the run's one-line summary, as the text output ends with it:
// "6 frames, 6 messages, 2 connections (2 established), 4 findings".
func Totals(s *record.Summary) string {
	before, findings, after := totals(s)
	return before + ", " + findings + after
}
