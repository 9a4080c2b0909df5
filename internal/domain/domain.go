// Package domain holds the vocabulary shared by every Soul Stack component:
// task results, statuses and the small error-code set mapped once at each
// edge (HTTP status in api, exit code in cli). It imports only the stdlib.
package domain

import (
	"errors"
	"fmt"
)

// Code classifies an Error so each edge can map it once.
type Code string

// Error codes. The api package maps them to HTTP statuses.
const (
	CodeInvalid      Code = "invalid"      // 400: bad request or DSL validation failure
	CodeUnauthorized Code = "unauthorized" // 401
	CodeForbidden    Code = "forbidden"    // 403
	CodeNotFound     Code = "not_found"    // 404
	CodeConflict     Code = "conflict"     // 409
	// CodeMethodNotAllowed: the path exists, not with this method (405,
	// with Allow).
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodeUnprocessable    Code = "unprocessable" // 422: well-formed but cannot be acted on (unknown git ref, …)
	CodeTooLarge         Code = "too_large"     // 413: a request body over the API's limit
	CodeUnavailable      Code = "unavailable"   // 503: store down
	CodeInternal         Code = "internal"      // 500
)

// Error is a classified error with optional structured details (for example
// the file:line list of a DSL validation failure).
type Error struct {
	Code    Code
	Message string
	Details any
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Err)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the Code of the first *Error in err's chain, or
// CodeInternal when there is none.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrNotFound is returned by stores when a record does not exist.
var ErrNotFound = &Error{Code: CodeNotFound, Message: "not found"}

// HostStatus is the outcome of one task on one host.
type HostStatus string

// Host statuses of a task result.
const (
	StatusOK      HostStatus = "ok"
	StatusChanged HostStatus = "changed"
	StatusFailed  HostStatus = "failed"
	StatusSkipped HostStatus = "skipped"
	// StatusUnknown is a command that would run in check mode: its result
	// cannot be known without running it (SPEC §9).
	StatusUnknown     HostStatus = "unknown"
	StatusUnreachable HostStatus = "unreachable"
	StatusRunning     HostStatus = "running"
	StatusPending     HostStatus = "pending"
)

// Result is what one module call (or one destiny, or one looped task)
// produced on one host. The standard fields are always present; module
// specific fields live in Data and are flattened into the register value.
type Result struct {
	Changed     bool `json:"changed"`
	Failed      bool `json:"failed"`
	Skipped     bool `json:"skipped"`
	Unreachable bool `json:"unreachable,omitempty"`
	// Unknown marks a command not run in check mode: it would run, its
	// result is unknown (SPEC §9).
	Unknown    bool           `json:"unknown,omitempty"`
	RC         int            `json:"rc"`
	Stdout     string         `json:"stdout"`
	Stderr     string         `json:"stderr"`
	Msg        string         `json:"msg"`
	Diff       string         `json:"diff"`
	DurationMS int64          `json:"duration_ms"`
	Data       map[string]any `json:"data,omitempty"`    // module-specific fields
	Output     map[string]any `json:"output,omitempty"`  // a destiny's declared output
	Results    []Result       `json:"results,omitempty"` // per-item results of a loop
	Tasks      []TaskResult   `json:"tasks,omitempty"`   // per-task results inside a destiny or block

	// Abandoned marks the Keeper's own verdict on work it stopped waiting
	// for (timed out, cancelled): the soul may still answer, and that late
	// answer may replace this result once (SPEC §10.3). Never taken from a
	// soul: the gateway clears it on what souls send.
	Abandoned bool `json:"abandoned,omitempty"`
}

// TaskResult names a Result inside a destiny bundle or block.
type TaskResult struct {
	Name   string `json:"name"`
	Module string `json:"module,omitempty"`
	Result
}

// Status summarizes the result as one HostStatus.
func (r Result) Status() HostStatus {
	switch {
	case r.Unreachable:
		return StatusUnreachable
	case r.Failed:
		return StatusFailed
	case r.Unknown:
		return StatusUnknown
	case r.Skipped:
		return StatusSkipped
	case r.Changed:
		return StatusChanged
	default:
		return StatusOK
	}
}

// Map is the register view of the result: the standard fields, the module
// specific fields of Data at top level, `output` and `results`.
func (r Result) Map() map[string]any {
	m := make(map[string]any, len(r.Data)+12)
	for k, v := range r.Data {
		m[k] = v
	}
	m["changed"] = r.Changed
	m["failed"] = r.Failed
	m["skipped"] = r.Skipped
	m["rc"] = int64(r.RC)
	m["stdout"] = r.Stdout
	m["stderr"] = r.Stderr
	m["msg"] = r.Msg
	m["diff"] = r.Diff
	m["duration_ms"] = r.DurationMS
	m["status"] = string(r.Status())
	if r.Output != nil {
		m["output"] = r.Output
	} else {
		m["output"] = map[string]any{}
	}
	if r.Results != nil {
		rs := make([]any, len(r.Results))
		for i, x := range r.Results {
			rs[i] = x.Map()
		}
		m["results"] = rs
	}
	return m
}
