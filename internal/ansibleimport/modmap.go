package ansibleimport

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/module"
)

// margs reads one task's module arguments for a converter of the module
// table, remembering which ones it used: the rest are reported.
type margs struct {
	t    *Task
	c    *converter
	tc   *taskConv
	sc   Scope
	used map[string]bool
	// omit is the condition under which Ansible leaves out the argument
	// val read last ({{ x | default(omit) }}), "" when it never does.
	omit string
}

func (a *margs) has(k string) bool { _, ok := a.t.Args[k]; return ok }

// str is the raw string value of k ("" when absent), marking it used.
func (a *margs) str(k string) string {
	a.used[k] = true
	switch v := a.t.Args[k].(type) {
	case string:
		return v
	case nil:
		return ""
	case bool:
		if v {
			return "true"
		}
		return "false"
	default:
		return fmt.Sprint(v)
	}
}

// first returns the name of the first of keys (aliases) that is given.
func (a *margs) first(keys ...string) string {
	for _, k := range keys {
		if a.has(k) {
			return k
		}
	}
	return ""
}

// val is the translated value of k.
func (a *margs) val(k string) any {
	a.used[k] = true
	a.omit = ""
	if src, ok := a.t.Args[k].(string); ok {
		tr := TranslateValue(src, a.sc)
		if tr.Omit != "" {
			a.omit = tr.Omit
			a.tc.take(tr, k)
			return tr.CEL
		}
	}
	return a.c.translateAny(a.t.Args[k], a.tc, a.sc, k)
}

// into builds the params of module mod: each pair maps an Ansible argument
// (with its aliases, "dest|path|name") to our parameter. A parameter the
// module's schema does not have is reported, never written.
type into struct {
	a      *margs
	mod    string
	params omap
	schema module.Schema
}

func (a *margs) into(mod string) *into {
	m, ok := module.Lookup(mod)
	in := &into{a: a, mod: mod, params: newMap()}
	if ok {
		in.schema = m.Schema()
	}
	return in
}

// set writes param = v.
func (in *into) set(param string, v any) {
	if _, ok := in.schema.Params[param]; !ok {
		in.a.tc.need("%s has no parameter %s", in.mod, param)
		return
	}
	in.params.set(param, coerce(param, in.schema.Params[param].Type, v), "")
}

// omitted is the value of a parameter Ansible leaves out when omit holds
// ({{ x | default(omit) }}): for a list parameter, where an empty list is
// the same as none, the empty list then, and otherwise the value as
// Ansible's list type reads it (a string splits at commas).
func (in *into) omitted(param string, v any, omit string) any {
	p, ok := in.schema.Params[param]
	s, isStr := v.(string)
	if !ok || !isStr || (p.Type != module.TypeStrList && p.Type != module.TypeList) {
		in.a.tc.approx("%s: default(omit): the parameter is given (empty) where Ansible left it out", param)
		return v
	}
	x := unwrap(s)
	return fmt.Sprintf("${ (%s) ? [] : (type(%s) == type([]) ? dyn(%s) : split(string(%s), \",\")) }", omit, x, x, x)
}

// coerce converts a literal as Ansible's argument spec does for a typed
// option: "yes"/"no" for a boolean, "86400" for an integer, and an integer
// mode (YAML 1.1 reads 0644 as 420) to the octal text it stands for, which
// is what Ansible passes to chmod. Expressions are left as they are: the
// validator types them.
func coerce(param string, t module.ParamType, v any) any {
	switch x := v.(type) {
	case int:
		if param == "mode" && x >= 0 {
			return fmt.Sprintf("%04o", x)
		}
		if t == module.TypeString {
			return strconv.Itoa(x)
		}
	case string:
		if strings.Contains(x, "${") {
			return v
		}
		switch t {
		case module.TypeBool:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "yes", "on", "true", "1", "y", "t":
				return true
			case "no", "off", "false", "0", "n", "f":
				return false
			}
		case module.TypeInt:
			if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
				return n
			}
		}
	}
	return v
}

// copy maps the Ansible argument (or its aliases, "a|b") to param when
// given.
func (in *into) copy(ansible, param string) {
	for _, k := range strings.Split(ansible, "|") {
		if in.a.has(k) {
			v := in.a.val(k)
			if omit := in.a.omit; omit != "" {
				in.a.omit = ""
				v = in.omitted(param, v, omit)
			}
			in.set(param, v)
			return
		}
	}
}

// same copies each argument that has the same name here.
func (in *into) same(names ...string) {
	for _, n := range names {
		in.copy(n, n)
	}
}

// convertModule maps one task's module and arguments; what it cannot map
// is reported through a.tc.
func convertModule(a *margs) (string, omap) {
	conv, ok := moduleTable[a.t.Module]
	if !ok {
		return placeholder(a, fmt.Sprintf("the module %s has no Soul Stack equivalent in the import table", a.t.FQCN))
	}
	in := conv(a)
	if in == nil {
		return placeholder(a, "")
	}
	a.rest(in.mod)
	return in.mod, in.params
}

// placeholder is a task that fails validation at its line until a person
// decides (SPEC §17: nothing is dropped silently).
func placeholder(a *margs, why string) (string, omap) {
	if why != "" {
		a.tc.need("%s", why)
	}
	p := newMap()
	p.set("command", "false", "")
	p.set("todo_import", fmt.Sprintf("%s %v", a.t.FQCN, a.t.Args), "")
	for k := range a.t.Args {
		a.used[k] = true
	}
	return "core.exec.run", p
}

// ignorable are arguments whose absence changes nothing here: Soul Stack
// does what they ask for by default, or they only shape Ansible's output.
var ignorable = map[string]string{
	"force_apt_get": "", "lock_timeout": "", "unsafe_writes": "", "attributes": "attributes (chattr) are not set",
	"seuser": "SELinux contexts are not set", "serole": "SELinux contexts are not set", "setype": "SELinux contexts are not set", "selevel": "SELinux contexts are not set",
	"follow": "", "use": "", "daemon_reexec": "",
}

// rest reports the arguments no converter used.
func (a *margs) rest(mod string) {
	var left []string
	for k := range a.t.Args {
		if !a.used[k] {
			left = append(left, k)
		}
	}
	sort.Strings(left)
	for _, k := range left {
		if why, ok := ignorable[k]; ok {
			if why != "" {
				a.tc.approx("%s: %s", k, why)
			}
			continue
		}
		a.tc.need("%s=%v is not imported into %s", k, a.t.Args[k], mod)
	}
}
