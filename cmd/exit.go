package cmd

import (
	"errors"
	"fmt"
)

// Exit codes: a public contract.
const (
	ExitOK       = 0 // success
	ExitFindings = 1 // a finding at or above --fail-on
	ExitFailure  = 2 // usage error, unreadable input or capture failure
	// ExitInterrupted: an interrupt (Ctrl-C, SIGTERM) ended the reading of
	// a file or standard input before its end; the results are partial.
	// (128 + SIGINT, as shells report it.) Not for a live capture.
	ExitInterrupted = 130
)

// exitError carries an exit code; its message (if any) has been printed or
// is printed by Run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks a command-line mistake (exit 2).
func usageError(format string, args ...any) error {
	return &exitError{code: ExitFailure, err: fmt.Errorf(format, args...)}
}

// failure marks an input or capture problem (exit 2).
func failure(err error) error { return &exitError{code: ExitFailure, err: err} }

// findingsReached is the exit of a run whose findings reached --fail-on
// (exit 1); the line that names them has been printed.
func findingsReached() error { return &exitError{code: ExitFindings} }

// interrupted is the exit of a file run an interrupt cut short (exit 130);
// the output said so (run-interrupted).
func interrupted() error { return &exitError{code: ExitInterrupted} }

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitFailure
}
