// Package cmdutil holds what the three command trees share: exit codes and
// error printing.
package cmdutil

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes shared by keeper, soul and soulctl.
const (
	ExitOK     = 0
	ExitFailed = 1 // the operation failed (a run ended failed, a module failed)
	ExitUsage  = 2 // usage or validation error
)

// ExitError carries an exit code up to Main without printing anything more
// than Err (which may be nil when the command already printed).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Usage wraps err as a usage/validation failure (exit 2).
func Usage(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// Failed wraps err as an operation failure (exit 1).
func Failed(err error) error { return &ExitError{Code: ExitFailed, Err: err} }

// Code prints err (if any) to stderr and maps it to an exit code. Errors
// from cobra's own flag/argument parsing are usage errors.
func Code(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(stderr, "error:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(stderr, "error:", err)
	if isUsage(err) {
		return ExitUsage
	}
	return ExitFailed
}

func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "required flag", "invalid argument", "flag needs an argument"} {
		if len(msg) >= len(p) && contains(msg, p) {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
