// Package dsl is the service repository model: it reads service.yml,
// essence/, scenario/<name>/ and destiny/<name>/ into typed values that keep
// the source position of every node, and validates them fail-closed (every
// problem of a repo is reported with file:line:col before anything runs).
//
// Expressions inside the model stay source text; they are compiled (and
// cached) by package expr, so the engine and the task executor evaluate the
// exact programs validation compiled.
package dsl

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module/custom"
)

// DefaultMaxLoopItems bounds the items of one task's loop: (SPEC §17): a
// literal list over it is refused at validation, and a computed list over
// the Keeper's runs.max_loop_items (this default when unset) fails the
// task at run time before any item runs.
const DefaultMaxLoopItems = 10000

// Pos is a position in a service repository: File is relative to the repo
// directory (for destiny bundles, relative to the destiny directory, prefixed
// with "destiny/<name>/"); Line and Col are 1-based, 0 when unknown.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// String renders p as file:line:col (or just file when the line is unknown).
func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Service is a loaded and validated service repository.
type Service struct {
	Manifest Manifest
	// Essence holds the parsed files of essence/ by base name without the
	// extension: "_default", a coven name, or an incarnation name.
	Essences  map[string]map[string]any
	Scenarios map[string]*Scenario
	Destinies map[string]*Destiny
	// Health holds health/<name>.yml by name (SPEC §14.1).
	Health map[string]*HealthCheck
	// Rules holds rules/<name>.yml by name (SPEC §17).
	Rules map[string]*Rule
	// Modules are the custom modules of modules/<name>/, by their task
	// name (service.<name>).
	Modules map[string]*custom.Module
	// Warnings are advice found while validating that does not make the
	// repository invalid (an unquoted ${ input.* } in a shell command line).
	Warnings Problems
	// KeyOrder is the order in which the repository's YAML wrote the keys
	// of its maps (essence, vars, input defaults, literal values): maps
	// iterate in it, as Ansible's do (issue 37).
	KeyOrder *expr.KeyOrder

	validateState func(map[string]any) error
	// essenceOpen is set when an essence file could not be read: its keys
	// are unknown, so essence.* is not closed.
	essenceOpen bool
}

// Manifest is service.yml.
type Manifest struct {
	Name        string
	Description string
	// StateSchema is the JSON Schema of incarnation.state (nil = anything).
	StateSchema map[string]any
	Pos         Pos
}

// Scenario is one operation over an incarnation: scenario/<name>/.
type Scenario struct {
	Name string
	// Dir is the scenario directory relative to the repo ("scenario/restart").
	Dir          string
	Input        Inputs
	StateChanges StateChanges
	// Vars are the values of vars.yml (visible as vars.*, task vars win).
	Vars map[string]any
	// VarsFiles are the scenario's vars_files:, resolved per host and
	// merged over Vars.
	VarsFiles []VarsFile
	Tasks     []*Task
	// Files are all files of the scenario directory, keyed by path relative
	// to it ("main.yml", "templates/x.conf.tmpl").
	Files map[string][]byte
	Pos   Pos
}

// Destiny is an isolated reusable bundle of tasks: destiny/<name>/. Destinies
// are shipped to souls as Files and re-parsed there with ParseDestiny.
type Destiny struct {
	// KeyOrder is the YAML key order of the destiny's own files (see
	// Service.KeyOrder).
	KeyOrder *expr.KeyOrder
	Name     string
	Dir      string // "destiny/<name>"
	Input    Inputs
	// VarsFiles are the destiny's vars_files:, resolved on the host.
	VarsFiles []VarsFile
	Tasks     []*Task
	// Output maps output names to values whose strings may hold ${ }
	// interpolations, rendered after the destiny's tasks ran.
	Output map[string]any
	Files  map[string][]byte
	Pos    Pos
}

// StateChanges is what a successful run commits into incarnation.state.
type StateChanges struct {
	// Sets maps a state key to a value whose strings may hold ${ }.
	Sets map[string]any
	// Unsets lists state keys removed at commit.
	Unsets []string
	Pos    Pos
	// SetPos is where the value of each key of Sets is written.
	SetPos map[string]Pos
}

// Task is one entry of a tasks: list. Exactly one of Module, Apply, Block is
// set once includes are resolved (an include without other keys is spliced
// into the surrounding list; an include carrying keys such as when: becomes
// a Block with Include set to the file name).
type Task struct {
	Name   string
	Module string
	// Params are plain Go values (map[string]any, []any, string, int,
	// float64, bool, nil); strings may hold ${ } interpolations.
	Params  map[string]any
	Apply   *Apply
	Block   []*Task
	Include string

	Vars map[string]any
	// VarsFiles are the task's vars_files:, resolved per host before
	// Vars (which win).
	VarsFiles []VarsFile
	Register  string
	// When, Where, FailedWhen and ChangedWhen are bare CEL ("" = not set).
	// A YAML boolean is kept as "true" or "false".
	When        string
	Where       string
	FailedWhen  string
	ChangedWhen string
	Onchanges   []string
	Onfail      []string
	Require     []string
	// Loop is either a YAML list (elements may hold ${ }) or a string that
	// is exactly one ${ } expression yielding a list; nil = no loop.
	Loop    any
	Retry   *Retry
	Timeout time.Duration

	// Scenario-only keys.
	On      *On
	Serial  *Serial
	RunOnce bool
	// Delegate is delegate: [coven, …] on a module task inside a serial:
	// block (SPEC §9): the task runs, for each host of the wave, on the
	// incarnation's members carrying every listed coven.
	Delegate *Delegate

	// Path identifies the task inside its scenario or destiny after
	// includes are spliced: "2" is the third top-level task, "2.0" the
	// first task of its block. Stable for a given commit.
	Path string
	Pos  Pos
	// KeyPos holds the position of each key given on the task.
	KeyPos map[string]Pos
}

// IsProbe reports whether the task is declared read-only with
// changed_when: false (the probe idiom that runs even in check mode).
func (t *Task) IsProbe() bool { return strings.TrimSpace(t.ChangedWhen) == "false" }

// Apply is a task's apply: {destiny, input}.
type Apply struct {
	Destiny string
	// Input values may hold ${ } interpolations.
	Input map[string]any
	Pos   Pos
}

// Retry is a task's retry: {count, delay, until}.
type Retry struct {
	Count int
	Delay time.Duration
	// Until is bare CEL over register.self; "" = until the task succeeds.
	Until string
	Pos   Pos
}

// On is a task's stable target. A nil *On means all members of the
// incarnation.
type On struct {
	// Keeper is on: keeper (the task runs inside the Keeper process).
	Keeper bool
	// Covens is on: [a, b]: members carrying every listed coven.
	Covens []string
	// CovenPos is where each of Covens is written.
	CovenPos []Pos
	Pos      Pos
}

// Delegate is a task's delegate: the covens whose members run the task on
// behalf of each host of the enclosing wave (delegated_for in expressions).
type Delegate struct {
	Covens []string
	// CovenPos is where each of Covens is written.
	CovenPos []Pos
	Pos      Pos
}

// Serial is a task's rolling-wave size: a count or a percentage of the
// target.
type Serial struct {
	Count   int     // > 0 when given as a number
	Percent float64 // in (0, 100] when given as "P%"
	Pos     Pos
}

// WaveSize returns the number of hosts per wave for a target of n hosts:
// Count, or ceil(Percent% of n), never less than 1. A nil Serial puts the
// whole target in one wave.
func (s *Serial) WaveSize(n int) int {
	if s == nil {
		return max(n, 1)
	}
	if s.Count > 0 {
		return s.Count
	}
	size := int(math.Ceil(s.Percent * float64(n) / 100))
	return max(size, 1)
}

// Waves splits items into consecutive waves of s.WaveSize(len(items)).
func Waves[T any](s *Serial, items []T) [][]T {
	if len(items) == 0 {
		return nil
	}
	size := s.WaveSize(len(items))
	var out [][]T
	for start := 0; start < len(items); start += size {
		out = append(out, items[start:min(start+size, len(items))])
	}
	return out
}

// InputType is the declared type of a scenario or destiny input.
type InputType string

// Input types.
const (
	InputString  InputType = "string"
	InputNumber  InputType = "number"
	InputInteger InputType = "integer"
	InputBoolean InputType = "boolean"
	InputList    InputType = "list"
	InputMap     InputType = "map"
)

// InputSpec declares one input of a scenario or destiny.
type InputSpec struct {
	Name        string
	Type        InputType
	Default     any
	HasDefault  bool
	Required    bool
	Description string
	// Secret masks the value (and values rendered from it) in logs, run
	// results, events, history and the UI.
	Secret bool
	Pos    Pos
}

// Inputs are the declared inputs in file order.
type Inputs []*InputSpec
