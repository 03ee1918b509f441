// Package finding is the one catalogue of what rdmacm-pd reports: every
// finding code, its fixed severity, the specification section it rests on
// and what it means. A finding is raised with New at the place where its
// condition is detected; codes are typed constants, so a code that is not in
// the catalogue does not compile. docs/findings.md documents every entry,
// and the codes' kebab-case names are a public contract.
package finding

import (
	"fmt"
	"strings"
)

// Severity ranks a finding.
type Severity uint8

// Severities, in increasing order. The zero Severity is "none".
const (
	Info Severity = iota + 1
	Warning
	Error
)

// severityNames are the severities' names, by Severity ("none" first).
var severityNames = [...]string{"none", "info", "warning", "error"}

func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return "none"
}

// ParseSeverity reads "info", "warning" or "error".
func ParseSeverity(s string) (Severity, error) {
	for v := Info; v <= Error; v++ {
		if strings.EqualFold(s, severityNames[v]) {
			return v, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want info, warning or error)", s)
}

// Finding is one validation result on a message, a connection or a run.
type Finding struct {
	Code      Code
	Severity  Severity
	Message   string
	Reference string
}

// New makes a finding of code c, with the catalogue's severity and
// reference and a one-line explanation.
func New(c Code, format string, args ...any) Finding {
	e := c.Check()
	return Finding{Code: c, Severity: e.Severity, Message: fmt.Sprintf(format, args...), Reference: e.Reference}
}

// Max is the highest severity among the findings, 0 when none.
func Max(fs []Finding) Severity {
	var s Severity
	for _, f := range fs {
		s = max(s, f.Severity)
	}
	return s
}
