// Package checker runs Checker procedures (SPEC §13, seed 003): runbooks of
// ordered steps whose conditions poll a platform through apicall commands,
// evaluate JMESPath expectations with attempts, and whose actions run
// commands, parse their JSON into vars and launch sub-procedures they then
// wait for (@deps). It holds the procedure model (parse, validate fail-closed
// with line:col errors), the {{ }} templating, the JMESPath functions, the
// task runner, the apicall dispatcher (in-process checker commands, the
// soulctl Commander, external bindings) and the cron Scheduler.
package checker

import (
	"fmt"
	"strings"
	"time"
)

// VarType is the declared type of a procedure var.
type VarType string

// Var types.
const (
	TypeString      VarType = "string"
	TypeNumber      VarType = "number"
	TypeBoolean     VarType = "boolean"
	TypeArrayString VarType = "array[string]"
	TypeArrayNumber VarType = "array[number]"
	TypeObject      VarType = "object"
)

// IsArray reports whether t is one of the array types.
func (t VarType) IsArray() bool { return t == TypeArrayString || t == TypeArrayNumber }

// Built-in vars.
const (
	VarDeps       = "@deps"
	VarDepsStatus = "@deps_status"
)

// Error types and handlers of on-error.
const (
	ErrAttemptsLimitReached = "AttemptsLimitReached"
	HandlerExit             = "_exit"
	HandlerContinue         = "_continue"
)

// Op is a comparison operator of an expectation.
type Op string

// Ops.
const (
	OpEq       Op = "=="
	OpNe       Op = "!="
	OpGt       Op = ">"
	OpGe       Op = ">="
	OpLt       Op = "<"
	OpLe       Op = "<="
	OpIn       Op = "in"
	OpContains Op = "contains"
)

var knownOps = map[Op]bool{OpEq: true, OpNe: true, OpGt: true, OpGe: true, OpLt: true, OpLe: true, OpIn: true, OpContains: true}

// Procedure is a parsed and validated procedure.
type Procedure struct {
	Name   string
	Source string
	Config ProcedureConfig
	Vars   []*Var // in declaration order
	Steps  []*Step
	// Secrets are the Keeper store secrets its templates read with
	// {{ secret("name") }}, in order of first use.
	Secrets []string
}

// Var returns the declaration of name, or nil.
func (p *Procedure) Var(name string) *Var {
	for _, v := range p.Vars {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// ProcedureConfig is the procedure's config: block.
type ProcedureConfig struct {
	RunOnVIP bool
	Timeout  time.Duration // 0 = none
}

// Var is a declared var.
type Var struct {
	Name       string
	Type       VarType
	Default    any // JSON-shaped; nil when HasDefault is false
	HasDefault bool
	Public     bool
	// Secret: the var's values are replaced by **** in the task's stored
	// vars, step log, task_message and run_error (SPEC §10.2).
	Secret bool
	// DefaultSecret names the Keeper store secret that gives a secret
	// var's default (default_secret:): a secret var has no default in the
	// procedure source, which every viewer reads (audit L10).
	DefaultSecret string
	Line          int
}

// Step is one entry of steps:, run in YAML order.
type Step struct {
	Name       string
	Line       int
	Conditions []*Condition
	Action     *Action // nil for a pure gate
}

// Condition is one entry of a step's conditions:. Exactly one of Calls and
// Const is set.
type Condition struct {
	Line     int
	Calls    *Calls
	Const    *Value
	Expect   []*Expect
	Attempts Attempts
	OnError  map[string]string // error type → handler
	Log      LogSpec
}

// Calls is an apicall: one command, or a list run in parallel whose results
// form a JSON array in list order.
type Calls struct {
	Commands []*Command
	List     bool
}

// Expect is one expectation: Filter applied to the condition's data, compared
// with Value by Op.
type Expect struct {
	Line   int
	Filter *Filter
	Op     Op
	Value  *Value
}

// Attempts says how often a condition is evaluated.
type Attempts struct {
	Min, Max int
	Interval time.Duration
}

// Action is a step's action:.
type Action struct {
	Calls *Calls // may be nil (log only)
	Parse []*ParseRule
	Log   LogSpec
}

// ParseRule stores (op store) or appends (op push) the filter's result into Var.
type ParseRule struct {
	Line   int
	Filter *Filter
	Op     string
	Var    string
}

// Parse ops.
const (
	ParseStore = "store"
	ParsePush  = "push"
)

// LogSpec holds the templates logged before and after a condition or action.
type LogSpec struct {
	Before, After *Template
}

// Value is a YAML value whose strings may hold {{ }} placeholders.
type Value struct {
	v any // JSON-shaped, with *Template in place of templated strings
}

// Render expands the value; a string that is exactly one placeholder yields
// the var's typed value.
func (v *Value) Render(vars map[string]any) (any, error) {
	return renderValue(v.v, vars)
}

func renderValue(x any, vars map[string]any) (any, error) {
	switch t := x.(type) {
	case *Template:
		return t.Value(vars)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := renderValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := renderValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return x, nil
}

// Issue is one validation problem at a position of the procedure's YAML.
type Issue struct {
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Msg  string `json:"message"`
}

// ValidationError lists everything wrong with a procedure.
type ValidationError struct {
	Name   string
	Issues []Issue
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		lines[i] = fmt.Sprintf("%s:%d:%d: %s", e.Name, is.Line, is.Col, is.Msg)
	}
	return strings.Join(lines, "\n")
}

// checkType reports whether a JSON-shaped value fits t; null fits every
// type (an unset var).
func checkType(t VarType, v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return t == TypeString
	case float64:
		return t == TypeNumber
	case bool:
		return t == TypeBoolean
	case map[string]any:
		return t == TypeObject
	case []any:
		if !t.IsArray() {
			return false
		}
		for _, e := range x {
			if !checkElem(t, e) {
				return false
			}
		}
		return true
	}
	return false
}

// checkElem reports whether e fits as an element of array type t.
func checkElem(t VarType, e any) bool {
	switch e.(type) {
	case string:
		return t == TypeArrayString
	case float64:
		return t == TypeArrayNumber
	}
	return false
}

// elemType is the scalar type of array type t's elements.
func (t VarType) elemType() VarType {
	switch t {
	case TypeArrayString:
		return TypeString
	case TypeArrayNumber:
		return TypeNumber
	}
	return ""
}
