// Package module defines the Module interface, the params schema every module
// declares (used by dsl validation before anything runs) and the registry,
// which is the only list of modules.
package module

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"

	"github.com/soulstack/soulstack/internal/domain"
)

// ParamType is the declared type of one module parameter.
type ParamType string

// Parameter types. TypeAny accepts every value.
const (
	TypeString  ParamType = "string"
	TypeInt     ParamType = "integer"
	TypeNumber  ParamType = "number"
	TypeBool    ParamType = "boolean"
	TypeList    ParamType = "list"
	TypeMap     ParamType = "map"
	TypeAny     ParamType = "any"
	TypeStrList ParamType = "list[string]"
)

// Param declares one parameter of a module.
type Param struct {
	Type        ParamType
	Required    bool
	Default     any
	Description string
	// Check, when set, validates a literal string value at load time (a
	// value with ${…} is checked by the module when it runs).
	Check func(string) error `json:"-"`
	// CheckSource, when set, validates a literal string value as written,
	// ${…} included, before interpolation: it rejects text that reads as
	// something else there (a regexp group ${1} in a replacement).
	CheckSource func(string) error `json:"-"`
}

// Field declares one module-specific field of a module's result.
type Field struct {
	Type        ParamType
	Description string
}

// ResultFields are the fields every module result carries, as register.<name>
// shows them (SPEC §5), with their types. Module-specific fields are declared
// by Schema.Output.
var ResultFields = map[string]Field{
	"changed":     {Type: TypeBool, Description: "the task changed something"},
	"failed":      {Type: TypeBool, Description: "the task failed"},
	"skipped":     {Type: TypeBool, Description: "the task was skipped"},
	"rc":          {Type: TypeInt, Description: "exit code (commands) or status code"},
	"stdout":      {Type: TypeString, Description: "standard output"},
	"stderr":      {Type: TypeString, Description: "standard error"},
	"msg":         {Type: TypeString, Description: "human-readable message"},
	"diff":        {Type: TypeString, Description: "what changed, as a diff"},
	"duration_ms": {Type: TypeInt, Description: "how long the task ran"},
	"status":      {Type: TypeString, Description: "ok, changed, failed, skipped or unreachable"},
	"output":      {Type: TypeMap, Description: "the output: of an applied destiny"},
	"results":     {Type: TypeList, Description: "per-item results of a loop task"},
}

// Schema declares what a module accepts and what it returns.
type Schema struct {
	// Summary is a one-line description of what the module does, shown by
	// `soulctl module list|show`; optional.
	Summary string
	Params  map[string]Param
	// ExactlyOne lists groups of parameters of which exactly one must be
	// given (for example {"command", "cmd"} for core.exec.run).
	ExactlyOne [][]string
	// AtLeastOne lists groups of which at least one must be given
	// ({"name", "names"} for core.pkg.installed).
	AtLeastOne [][]string
	// KeeperSide marks modules that run inside the Keeper (on: keeper).
	KeeperSide bool
	// Unconfinable marks modules that touch host-global state (packages,
	// services, sysctl, users) and so refuse to run under --root.
	Unconfinable bool
	// RunsProgram marks modules that run a program of the caller's
	// choosing (core.exec.run, core.cmd.shell). A --root confines the
	// files a module touches, not what a program does, so these never run
	// inside the Keeper: on the Keeper's host a scenario's command could
	// read its signing key and database.
	RunsProgram bool
	// Output declares the module-specific fields of the module's result
	// beyond ResultFields, with their types. Expressions reading
	// register.<name>.<field> are type-checked against it: a field that is
	// neither common nor declared is a validation error.
	Output map[string]Field
	// ReadOnly marks modules that never change anything (test.ping, …), so
	// they run in check mode too.
	ReadOnly bool
	// Example, when set, is the task `soulctl module show` prints (one
	// YAML list item); otherwise one is made from the params.
	Example string
}

// Env is what a module sees of the world besides its params.
type Env struct {
	// Check is check mode: report what would change, change nothing.
	Check bool
	// Root confines file-touching modules to this directory ("" = real /).
	Root string
	// Facts is the soulprint of the host the module runs on.
	Facts map[string]any
	// Files holds the bundle files (templates) of the scenario or destiny
	// the task comes from; template paths are relative to its root.
	Files fs.FS
	// TemplateData is the data core.file.rendered renders with (task vars,
	// input, essence, soulprint), already merged by the executor.
	TemplateData map[string]any
	// MapKeys orders the keys of a map in TemplateData as its YAML wrote
	// them (issue 37); nil sorts them.
	MapKeys func(map[string]any) []string
	// InKeeper is set when the module runs inside the Keeper (on: keeper):
	// it must then not run programs (a file module's validate:), which
	// could read the Keeper's keys and database.
	InKeeper bool
	// Log receives progress lines; may be nil.
	Log *slog.Logger
	// HTTPClient sends core.http.request's requests; nil means
	// http.DefaultClient (souls). Inside the Keeper it is the client of
	// the config's http.allow policy (internal/netguard).
	HTTPClient *http.Client
	// DialContext opens the TCP connections of core.wait.port inside the
	// Keeper: the config's http.allow policy (internal/netguard), so a raw
	// probe reaches no more than core.http.request does. Nil on souls (a
	// plain dialer); inside the Keeper nil refuses the probe.
	DialContext func(ctx context.Context, network, address string) (net.Conn, error)
}

// Module is one idempotent operation. Apply reads the current state,
// compares, returns early when converged, and mutates only outside check
// mode. A returned error means the module could not run (it becomes a
// failed result with the error as msg); a module that ran and failed sets
// Result.Failed itself.
type Module interface {
	Name() string
	Schema() Schema
	Apply(ctx context.Context, params map[string]any, env *Env) (domain.Result, error)
}

var (
	mu       sync.RWMutex
	registry = map[string]Module{}
)

// Register adds m to the registry; it panics on a duplicate name, which is a
// programming error.
func Register(m Module) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[m.Name()]; dup {
		panic(fmt.Sprintf("module %s registered twice", m.Name()))
	}
	registry[m.Name()] = m
}

// Lookup returns the module registered under name.
func Lookup(name string) (Module, bool) {
	mu.RLock()
	defer mu.RUnlock()
	m, ok := registry[name]
	return m, ok
}

// Names lists the registered module names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
