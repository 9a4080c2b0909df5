package ansibleimport

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Fidelity says how faithfully one upstream task was imported (SPEC §17).
type Fidelity string

// The fidelities of an imported task.
const (
	// Exact: the imported task does what the upstream task did.
	Exact Fidelity = "exact"
	// Approximated: it does nearly that; Notes say what is lost.
	Approximated Fidelity = "approximated"
	// Manual: a person must decide; the output fails validation at the
	// task until they do.
	Manual Fidelity = "manual"
)

// Row is one upstream task in the import report.
type Row struct {
	// Upstream is the task's file:line in the role; Output its file:line
	// in the written repository.
	Upstream string `json:"upstream"`
	Output   string `json:"output"`
	Name     string `json:"name"`
	// Module is the upstream module, Into the Soul Stack module.
	Module   string   `json:"module"`
	Into     string   `json:"into,omitempty"`
	Fidelity Fidelity `json:"fidelity"`
	// Notes say what an approximation loses or why a task is manual.
	Notes []string `json:"notes,omitempty"`

	node *yaml.Node
	file string
	// hoisted marks an include_vars that became the destiny's vars_files.
	hoisted bool
}

// taskConv collects what converting one task found.
type taskConv struct {
	lost, manual []string
}

func (tc *taskConv) approx(format string, args ...any) {
	tc.lost = append(tc.lost, fmt.Sprintf(format, args...))
}

func (tc *taskConv) need(format string, args ...any) {
	tc.manual = append(tc.manual, fmt.Sprintf(format, args...))
}

func (tc *taskConv) take(t Translation, what string) {
	if t.Manual != "" {
		tc.need("%s: %s", what, t.Manual)
	}
	for _, l := range t.Lost {
		tc.approx("%s: %s", what, l)
	}
}

func (tc *taskConv) fidelity() (Fidelity, []string) {
	switch {
	case len(tc.manual) > 0:
		return Manual, append(tc.manual, tc.lost...)
	case len(tc.lost) > 0:
		return Approximated, tc.lost
	}
	return Exact, nil
}

// converter turns one role's tasks into Soul Stack tasks.
type converter struct {
	role *Role
	// vars are the role's variables by name, with what is known of their
	// type; all are read as vars.<name> inside the imported block.
	vars map[string]Kind
	// registers are the names registered by earlier tasks.
	registers map[string]bool
	// notifiers maps a handler (its name or a listen topic) to the
	// registers of the tasks that notify it.
	notifiers map[string][]string
	rows      []*Row
	// outFile is the path of the file being written, for the report.
	outFile string
	// seen guards include cycles.
	including map[string]bool
	slugs     map[string]int
	// statRegs are registers of stat tasks: Ansible's result.stat.x is
	// Soul Stack's register.r.x.
	statRegs []string
	// pendingWhen is a condition the module's converter adds to the
	// task's when: (assert fails when its conditions do not hold).
	pendingWhen string
	// varFileFact is the fact whose value names the vars file to read
	// (include_vars: "{{ ansible_facts.os_family }}.yml"): the files are
	// written under soulprint's spelling of the values.
	varFileFact *Fact
	// inScenario is set while converting a playbook's own tasks: they
	// are scenario steps, where run_once: exists.
	inScenario bool
	// overrides are variables the role sets only when they are undefined
	// (set_fact: {x: "{{ __x }}"} when: x is not defined), by name with
	// their input type: in Ansible the inventory may give them, here they
	// become optional inputs (null when not given) fed from the essence.
	overrides map[string]string
	// playbook is the playbook's file name, for the report.
	playbook string
}

func newConverter(r *Role) *converter {
	c := &converter{role: r, vars: map[string]Kind{}, registers: map[string]bool{}, notifiers: map[string][]string{},
		including: map[string]bool{}, slugs: map[string]int{}, overrides: map[string]string{}}
	addVars := func(v *Vars) {
		if v == nil {
			return
		}
		for _, n := range v.Names {
			val, err := v.Value(n)
			if err != nil {
				c.vars[n] = KindUnknown
				continue
			}
			c.vars[n] = valueKind(val)
		}
	}
	addVars(r.Defaults)
	names := make([]string, 0, len(r.VarFiles))
	for n := range r.VarFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		addVars(r.VarFiles[n])
	}
	return c
}

// valueKind is the kind of a decoded YAML value; a string holding Jinja is
// unknown (its type is the expression's).
func valueKind(v any) Kind {
	switch x := v.(type) {
	case bool:
		return KindBool
	case int, int64, uint64:
		return KindInt
	case float64:
		return KindFloat
	case string:
		if strings.Contains(x, "{{") {
			return KindUnknown
		}
		return KindString
	case []any:
		return KindList
	case map[string]any:
		return KindMap
	case nil:
		return KindNull
	}
	return KindUnknown
}

// scope resolves names for the task being converted; self is the task's
// own register (register.self in failed_when/changed_when/until) and
// loopVar the loop variable's name.
func (c *converter) scope(self, loopVar string) Scope {
	return Scope{Stat: func(path string) bool {
		for _, r := range c.statRegs {
			if path == "register."+r {
				return true
			}
		}
		return false
	}, Var: func(name string) (string, Kind, bool) {
		switch {
		case self != "" && name == self:
			return "register.self", KindRegister, true
		case loopVar != "" && name == loopVar:
			return "item", KindUnknown, true
		case c.registers[name]:
			return "register." + name, KindRegister, true
		}
		if k, ok := c.vars[name]; ok {
			return "vars." + name, k, true
		}
		return "", KindUnknown, false
	}}
}

var slugRe = regexp.MustCompile(`[^a-z0-9]+`)

// registerFor returns the task's register, naming one after the task when
// it has none (handlers need one to watch).
func (c *converter) registerFor(t *Task) string {
	if r := t.keyword("register"); r != "" {
		return r
	}
	base := strings.Trim(slugRe.ReplaceAllString(strings.ToLower(t.Name), "_"), "_")
	if base == "" || base[0] >= '0' && base[0] <= '9' {
		base = "task_" + base
	}
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "_")
	}
	c.slugs[base]++
	if n := c.slugs[base]; n > 1 {
		base = fmt.Sprintf("%s_%d", base, n)
	}
	return base
}

// notifies lists the handlers a task notifies.
func notifies(t *Task) []string {
	n, ok := t.Keywords["notify"]
	if !ok {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, x := range n.Content {
		out = append(out, x.Value)
	}
	return out
}

// conditions joins a when:-like keyword (a string or a list, all of which
// must hold) into one Jinja expression.
func conditions(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode {
		parts := make([]string, 0, len(n.Content))
		for _, x := range n.Content {
			parts = append(parts, "("+x.Value+")")
		}
		return strings.Join(parts, " and ")
	}
	return n.Value
}
