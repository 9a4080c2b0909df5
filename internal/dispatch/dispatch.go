// Package dispatch defines the seam between the run engine and whatever
// executes work on hosts: the soul gateway (real souls over the stream), the
// keeper-local runner (on: keeper) and the simulated transport of scenario
// tests. The engine sees only Dispatcher.
package dispatch

import (
	"context"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/expr"
)

// Call is one rendered module call for one host.
type Call struct {
	Module string         `json:"module"`
	Params map[string]any `json:"params"`
	// Files are the bundle files the call may need (templates for
	// core.file.rendered), keyed by path relative to the scenario directory.
	Files map[string][]byte `json:"files,omitempty"`
	// TemplateData is the data core.file.rendered renders with.
	TemplateData map[string]any `json:"template_data,omitempty"`
	// KeyOrder is the YAML key order of the maps in TemplateData (a
	// template's `for k, v in m.items()` follows it, issue 37).
	KeyOrder *expr.KeyOrder `json:"key_order,omitempty"`
	// Custom is the service's custom module the call runs (Module is
	// service.<name>): its module.yml and program, pinned by SHA-256.
	Custom *CustomModule `json:"custom,omitempty"`
}

// CustomModule is a service repository's module (modules/<name>/) as it
// travels to a soul: module.yml and the program, pinned by the SHA-256 the
// Keeper computed when it loaded the service; the soul refuses a program
// that does not match.
type CustomModule struct {
	Spec    []byte `json:"spec"`
	Program []byte `json:"program"`
	SHA256  string `json:"sha256"`
}

// Bundle is a whole destiny shipped to a soul, which runs it locally with its
// own requisites and returns per-task results and the destiny's output.
type Bundle struct {
	Destiny string            `json:"destiny"`
	Files   map[string][]byte `json:"files"` // the destiny directory, paths relative to it ("main.yml", "templates/x.tmpl")
	Input   map[string]any    `json:"input"`
	Essence map[string]any    `json:"essence,omitempty"`
	// KeyOrder is the YAML key order of the maps in Input and Essence
	// (issue 37); the destiny's own files add theirs on the host.
	KeyOrder *expr.KeyOrder `json:"key_order,omitempty"`
	// Modules are the service's custom modules the destiny calls, by name
	// (service.<name>).
	Modules map[string]*CustomModule `json:"modules,omitempty"`
}

// Work is what one host is asked to do. Exactly one of Call and Bundle is set.
type Work struct {
	RunID  string `json:"run_id"`
	TaskID string `json:"task_id"` // unique per run, task, host and attempt: results are idempotent by it
	// Task is the name of the scenario task the work comes from (for logs
	// and for the stubs of the simulated transport); "" when unknown.
	Task    string        `json:"task,omitempty"`
	Check   bool          `json:"check"`
	Timeout time.Duration `json:"timeout"`
	Call    *Call         `json:"call,omitempty"`
	Bundle  *Bundle       `json:"bundle,omitempty"`
	// Trace is the W3C trace context of the keeper's dispatch span
	// (traceparent, tracestate), so the soul's execution is its child in
	// the run's trace (internal/tracing); empty when tracing is off.
	Trace map[string]string `json:"trace,omitempty"`
}

// Request addresses Work to one host.
type Request struct {
	SID  string
	Work Work
}

// Dispatcher runs work on hosts. Dispatch sends every request in parallel
// (bounded by the implementation's fan-out limit) and blocks until each host
// answered, timed out or became unreachable; it returns one result per SID.
// A host that is not connected, or whose connection drops before it
// answers, gets a result with Unreachable set at once; one that exceeds
// Work.Timeout gets a failed result. onResult, when not nil, is called as
// each host's result arrives (live progress); it must not block.
type Dispatcher interface {
	Dispatch(ctx context.Context, reqs []Request, onResult func(sid string, r domain.Result)) map[string]domain.Result
}
