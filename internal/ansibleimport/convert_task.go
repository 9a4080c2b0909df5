package ansibleimport

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// tasks converts a task list. A set_fact opens a block around the tasks
// after it, whose vars: give the fact to them (a fact is set at that point
// of the run, per host, as in Ansible).
func (c *converter) tasks(ts []*Task, loopVar string) []omap {
	var out []omap
	for i, t := range ts {
		if t.Module == "set_fact" && !t.IsBlock {
			blk, ok := c.setFact(t, ts[i+1:], loopVar)
			if ok {
				return append(out, blk)
			}
			continue
		}
		if t.Module == "include_vars" && !t.IsBlock && c.never(t, loopVar) == "" {
			if blk, ok := c.includeVars(t, ts[i+1:], loopVar); ok {
				return append(out, blk)
			}
		}
		out = append(out, c.task(t, loopVar)...)
	}
	return out
}

// task converts one task; an include is spliced (one or more tasks).
func (c *converter) task(t *Task, loopVar string) []omap {
	if why := c.never(t, loopVar); why != "" {
		c.skipRows(t, why)
		return nil
	}
	switch {
	case t.IsBlock:
		return []omap{c.block(t, loopVar)}
	case t.Module == "include_tasks" || t.Module == "import_tasks":
		return c.include(t, loopVar)
	}
	return []omap{c.moduleTask(t, loopVar)}
}

// never says why t runs on no host a soul runs on (one of its when:
// conditions is constant false there, like ansible_os_family == "FreeBSD"),
// or "" when it may run.
func (c *converter) never(t *Task, loopVar string) string {
	n, ok := t.Keywords["when"]
	if !ok {
		return ""
	}
	conds := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		conds = n.Content
	}
	for _, cn := range conds {
		src := conditions(cn)
		if tr := TranslateCondition(src, c.scope("", loopVar)); tr.Manual == "" && len(tr.Lost) == 0 && tr.CEL == "false" {
			return "when: " + src
		}
	}
	return ""
}

// skipRows reports t, and every task inside it (blocks, included files),
// as not imported: they would never run on a host a soul runs on, so
// leaving them out changes nothing, and the report says so.
func (c *converter) skipRows(t *Task, why string) {
	name := t.Name
	if name == "" {
		name = t.Module
	}
	c.rows = append(c.rows, &Row{Upstream: fmt.Sprintf("%s:%d", t.File, t.Line), Output: "(left out)", Name: name, Module: t.FQCN, Into: "(not imported)",
		Fidelity: Exact, Notes: []string{"never runs on a host a soul runs on (" + why + "): left out"}})
	var inner []*Task
	inner = append(append(append(inner, t.Block...), t.Rescue...), t.Always...)
	if t.Module == "include_tasks" || t.Module == "import_tasks" {
		file := t.FreeForm
		if f, ok := t.Args["file"].(string); ok {
			file = f
		}
		if rel := path.Clean(file); !c.including[rel] {
			c.including[rel] = true
			defer delete(c.including, rel)
			inner = append(inner, c.role.TaskFiles[rel]...)
		}
	}
	for _, it := range inner {
		c.skipRows(it, why)
	}
}

func (c *converter) row(t *Task, out omap, into string, tc *taskConv) {
	f, notes := tc.fidelity()
	name := t.Name
	if name == "" {
		name = t.Module
	}
	c.rows = append(c.rows, &Row{Upstream: fmt.Sprintf("%s:%d", t.File, t.Line), Name: name, Module: t.FQCN, Into: into,
		Fidelity: f, Notes: notes, node: out.n, file: c.outFile})
}

// comment is the # import: comment of an output task that is not exact.
func comment(tc *taskConv) string {
	f, notes := tc.fidelity()
	switch f {
	case Manual:
		return "TODO(import): " + strings.Join(notes, "; ")
	case Approximated:
		return "import: approximated: " + strings.Join(notes, "; ")
	}
	return ""
}

func (c *converter) moduleTask(t *Task, loopVar string) omap {
	tc := &taskConv{}
	if lv := loopVarOf(t); lv != "" {
		loopVar = lv
	}
	out := newMap()
	if t.Name != "" {
		out.set("name", t.Name, "")
	}
	reg := t.keyword("register")
	if reg == "" && len(notifies(t)) > 0 {
		reg = c.registerFor(t)
	}
	a := &margs{t: t, c: c, tc: tc, sc: c.scope("", loopVar), used: map[string]bool{}}
	c.pendingWhen = ""
	mod, params := convertModule(a)
	for _, h := range notifies(t) {
		c.notifiers[h] = append(c.notifiers[h], reg)
	}
	out.set("module", mod, "")
	if !params.empty() {
		out.set("params", params, "")
	}
	c.keywords(t, out, tc, reg, loopVar)
	if reg != "" {
		out.set("register", reg, "")
		c.registers[reg] = true
		c.regModule(reg, t.Module)
	}
	if cm := comment(tc); cm != "" {
		out.n.HeadComment = cm
	}
	c.row(t, out, mod, tc)
	return out
}

// regModule remembers the module behind a register, for the fields its
// Ansible result has that ours names differently (stat's result.stat.*).
func (c *converter) regModule(reg, module string) {
	if module == "stat" {
		c.statRegs = append(c.statRegs, reg)
	}
}

func loopVarOf(t *Task) string {
	if lc, ok := t.Keywords["loop_control"]; ok {
		if v := lookupPath(lc, "loop_var"); v != nil {
			return v.Value
		}
	}
	if _, ok := t.Keywords["loop"]; ok {
		return "item"
	}
	for k := range t.Keywords {
		if strings.HasPrefix(k, "with_") {
			return "item"
		}
	}
	return ""
}

// keywords converts the task keywords shared by module tasks and blocks.
func (c *converter) keywords(t *Task, out omap, tc *taskConv, self, loopVar string) {
	sc := c.scope("", loopVar)
	when := ""
	if n, ok := t.Keywords["when"]; ok {
		when = conditions(n)
	}
	if c.pendingWhen != "" {
		if when != "" {
			when = "(" + when + ") and " + c.pendingWhen
		} else {
			when = c.pendingWhen
		}
		c.pendingWhen = ""
	}
	if when != "" {
		tr := TranslateCondition(when, sc)
		tc.take(tr, "when")
		out.set("when", celOrTodo(tr, when), "")
	}
	c.loop(t, out, tc, sc)
	if n, ok := t.Keywords["vars"]; ok {
		c.taskVars(n, out, tc, sc)
	}
	selfSc := c.scope(self, loopVar)
	for _, k := range []string{"changed_when", "failed_when"} {
		if n, ok := t.Keywords[k]; ok {
			tr := TranslateCondition(conditions(n), selfSc)
			tc.take(tr, k)
			out.set(k, celOrTodo(tr, conditions(n)), "")
		}
	}
	if n, ok := t.Keywords["until"]; ok {
		tr := TranslateCondition(conditions(n), selfSc)
		tc.take(tr, "until")
		retry := newMap()
		retries := t.keyword("retries")
		if retries == "" {
			retries = "3"
		}
		if cnt, err := strconv.Atoi(retries); err == nil {
			retry.set("count", cnt, "")
		} else {
			tc.need("retries %q is not a number", retries)
		}
		delay := t.keyword("delay")
		if delay == "" {
			delay = "5"
		}
		retry.set("delay", delay+"s", "")
		retry.set("until", celOrTodo(tr, conditions(n)), "")
		out.set("retry", retry, "")
	}
	if t.keyword("ignore_errors") != "" && isTrue(t.keyword("ignore_errors")) {
		if _, ok := t.Keywords["failed_when"]; !ok {
			out.set("failed_when", "false", "")
			tc.approx("ignore_errors: a failure is not shown as failed (ignored) in the run record, it counts as ok")
		}
	}
	if u := t.keyword("become_user"); u != "" && u != "root" {
		tc.need("become_user: %s — a soul runs modules as root; run the command as that user (runuser -u %s --) or set owner:", u, u)
	}
	if t.keyword("delegate_to") != "" {
		tc.need("delegate_to: a destiny runs on its own host; delegate in the scenario with delegate: [coven]")
	}
	if t.keyword("run_once") != "" && isTrue(t.keyword("run_once")) {
		if c.inScenario {
			out.set("run_once", true, "")
		} else {
			tc.need("run_once: a destiny runs on its own host; put the task in the scenario with run_once: true")
		}
	}
	if isTrue(t.keyword("no_log")) {
		tc.approx("no_log: declare the values it hid as secret inputs (secret: true) so Soul Stack masks them")
	}
	if cm := t.keyword("check_mode"); cm != "" && !(!isTrue(cm) && isFalse(t.keyword("changed_when"))) {
		// check_mode: false on a probe with changed_when: false is what
		// Soul Stack does already: such a command runs in check mode.
		tc.need("check_mode: %s — Soul Stack decides check mode per run (read-only probes run in check mode with changed_when: false)", cm)
	}
	if _, ok := t.Keywords["environment"]; ok && !c.envTaken(out) {
		tc.need("environment: only commands take env: in Soul Stack")
	}
	if n, ok := t.Keywords["async"]; ok {
		tc.need("async: %s — give the task a timeout: instead", n.Value)
	}
}

func (c *converter) envTaken(out omap) bool {
	for i := 0; i+1 < len(out.n.Content); i += 2 {
		if out.n.Content[i].Value == "params" {
			for j := 0; j+1 < len(out.n.Content[i+1].Content); j += 2 {
				if out.n.Content[i+1].Content[j].Value == "env" {
					return true
				}
			}
		}
	}
	return false
}

func isFalse(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "false", "no", "off", "0", "n":
		return true
	}
	return false
}

func isTrue(s string) bool {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1", "y":
		return true
	}
	return false
}

// celOrTodo is the translated CEL, or for a manual expression a CEL call
// that cannot compile, so validation stops at it with its line.
func celOrTodo(t Translation, src string) string {
	if t.Manual != "" {
		return "TODO_import(" + strconv.Quote(src) + ")"
	}
	return t.CEL
}

// valueOrTodo is a translated value, or for a manual one an expression
// that cannot compile.
func valueOrTodo(t Translation, src string) string {
	if t.Manual != "" {
		return "${ TODO_import(" + strconv.Quote(src) + ") }"
	}
	return t.CEL
}

func (c *converter) loop(t *Task, out omap, tc *taskConv, sc Scope) {
	var src *yaml.Node
	var kind string
	for k, n := range t.Keywords {
		if k == "loop" || strings.HasPrefix(k, "with_") {
			src, kind = n, k
		}
	}
	if src == nil {
		return
	}
	switch kind {
	case "loop", "with_items", "with_list":
		v := c.translateNode(src, tc, sc, "loop")
		if kind == "with_items" {
			// with_items flattens nested lists one level; loop: does not.
			switch x := v.(type) {
			case string:
				if inner := unwrap(x); strings.HasPrefix(strings.TrimSpace(x), "${") && inner != strconv.Quote(x) {
					v = "${ flatten(" + inner + ") }"
				} else {
					tc.approx("with_items flattens nested lists one level; loop: does not")
				}
			case []any:
				switch listShape(x) {
				case "exprs":
					v = "${ flatten(" + celList(x) + ") }"
				case "mixed":
					tc.approx("with_items flattens nested lists one level; loop: does not")
				}
			}
		}
		out.set("loop", v, "")
	case "with_dict":
		tr := TranslateValue(src.Value, sc)
		tc.take(tr, "with_dict")
		out.set("loop", valueOrTodo(tr, src.Value), "")
		tc.approx("with_dict: a loop over a map gives item.key and item.value in key order (Ansible: insertion order)")
	default:
		tc.need("%s has no loop: equivalent; write the list it builds as loop:", kind)
	}
	if lc, ok := t.Keywords["loop_control"]; ok && lookupPath(lc, "index_var") != nil {
		tc.need("loop_control.index_var: read loop_index instead")
	}
}

func (c *converter) taskVars(n *yaml.Node, out omap, tc *taskConv, sc Scope) {
	if n.Kind != yaml.MappingNode {
		tc.need("vars: is not a map")
		return
	}
	vars := newMap()
	for i := 0; i+1 < len(n.Content); i += 2 {
		name := n.Content[i].Value
		vars.set(name, c.translateNode(n.Content[i+1], tc, sc, "vars."+name), "")
		c.vars[name] = KindUnknown
	}
	out.set("vars", vars, "")
}

// translateNode translates every string of a YAML value.
func (c *converter) translateNode(n *yaml.Node, tc *taskConv, sc Scope, what string) any {
	var v any
	if err := n.Decode(&v); err != nil {
		tc.need("%s: %v", what, err)
		return nil
	}
	return c.translateAny(v, tc, sc, what)
}

func (c *converter) translateAny(v any, tc *taskConv, sc Scope, what string) any {
	switch x := v.(type) {
	case string:
		tr := TranslateValue(x, sc)
		tc.take(tr, what)
		return valueOrTodo(tr, x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = c.translateAny(e, tc, sc, what)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = c.translateAny(e, tc, sc, what+"."+k)
		}
		return out
	}
	return v
}

// block converts a block; rescue and always have no equivalent.
func (c *converter) block(t *Task, loopVar string) omap {
	tc := &taskConv{}
	out := newMap()
	if t.Name != "" {
		out.set("name", t.Name, "")
	}
	c.keywords(t, out, tc, "", loopVar)
	if len(t.Rescue) > 0 {
		tc.need("rescue: Soul Stack has no rescue; a task with onfail: [register] runs after a failure, but the run still fails")
	}
	if len(t.Always) > 0 {
		tc.need("always: Soul Stack has no always section; the tasks are kept after the block")
	}
	out.set("block", c.tasks(t.Block, loopVar), "")
	if cm := comment(tc); cm != "" {
		out.n.HeadComment = cm
	}
	c.row(t, out, "block", tc)
	return out
}

// include splices the tasks of an included file; with when: (or other
// keywords) they become a block.
func (c *converter) include(t *Task, loopVar string) []omap {
	tc := &taskConv{}
	file := t.FreeForm
	if f, ok := t.Args["file"].(string); ok {
		file = f
	}
	if n, ok := t.Keywords["when"]; ok && strings.Contains(file, "{{") {
		file = pinnedName(file, n)
	}
	rel := path.Clean(file)
	ts, ok := c.role.TaskFiles[rel]
	var expanded []omap
	if strings.Contains(file, "{{") {
		expanded, ok = c.includeByFact(file, loopVar)
	}
	switch {
	case expanded != nil:
	case strings.Contains(file, "{{"):
		tc.need("%s: the file name is an expression; include each file under a when: instead", file)
	case !ok:
		tc.need("%s: no such file in tasks/", file)
	case c.including[rel]:
		tc.need("%s includes itself", file)
	}
	if len(tc.manual) > 0 {
		out := newMap()
		out.set("name", "include "+file, "")
		out.set("module", "core.test.fail", "")
		out.set("params", map[string]any{"message": "TODO(import): " + strings.Join(tc.manual, "; "), "todo_import": true}, "")
		out.n.HeadComment = comment(tc)
		c.row(t, out, "", tc)
		return []omap{out}
	}
	c.including[rel] = true
	defer delete(c.including, rel)
	inner := expanded
	if inner == nil {
		inner = c.tasks(ts, loopVar)
	}
	if len(t.Keywords) == 0 {
		c.row(t, newMap(), "spliced", tc)
		c.rows[len(c.rows)-1].node = firstNode(inner)
		return inner
	}
	out := newMap()
	out.set("name", "include "+file, "")
	c.keywords(t, out, tc, "", loopVar)
	if t.Module == "include_tasks" {
		if _, ok := t.Keywords["loop"]; ok {
			tc.need("include_tasks with loop: loop each task of the file instead")
		}
	}
	out.set("block", inner, "")
	if cm := comment(tc); cm != "" {
		out.n.HeadComment = cm
	}
	c.row(t, out, "block", tc)
	return []omap{out}
}

func firstNode(ts []omap) *yaml.Node {
	if len(ts) == 0 {
		return nil
	}
	return ts[0].n
}

// setFact turns a set_fact into a block around the tasks after it, whose
// vars: hold the facts; ok is false when the facts could not be expressed
// (it then stays a manual task in place).
func (c *converter) setFact(t *Task, rest []*Task, loopVar string) (omap, bool) {
	tc := &taskConv{}
	sc := c.scope("", loopVar)
	vars := newMap()
	cond := ""
	if n, ok := t.Keywords["when"]; ok {
		tr := TranslateCondition(conditions(n), sc)
		tc.take(tr, "when")
		cond = tr.CEL
	}
	var names []string
	for k := range t.Args {
		if k != "cacheable" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	override := ""
	if n, ok := t.Keywords["when"]; ok && len(names) == 1 {
		k := names[0]
		src := strings.Join(strings.Fields(conditions(n)), " ")
		if _, known := c.vars[k]; !known && (src == k+" is not defined" || src == k+" is undefined") {
			override, cond, tc = k, "", &taskConv{}
		}
	}
	for _, k := range names {
		var expr string
		switch v := t.Args[k].(type) {
		case string:
			tr := TranslateValue(v, sc)
			tc.take(tr, "set_fact "+k)
			expr = valueOrTodo(tr, v)
			if tr.Manual == "" && !strings.HasPrefix(expr, "${") {
				expr = "${ " + strconv.Quote(expr) + " }"
			}
		case bool:
			expr = fmt.Sprintf("${ %t }", v)
		case int:
			expr = fmt.Sprintf("${ %d }", v)
		case float64:
			expr = "${ " + strconv.FormatFloat(v, 'g', -1, 64) + " }"
		default:
			tc.need("set_fact %s: only string, boolean and number values are imported", k)
		}
		if k == override {
			c.overrides[k] = c.overrideType(t.Args[k])
			vars.set(k, fmt.Sprintf("${ type(vars.%s) != type(null) ? vars.%s : %s }", k, k, unwrap(expr)), "")
			continue
		}
		_, known := c.vars[k]
		if cond != "" && !known && (cond == "true" || cond == "!has(vars."+k+")") {
			// "Unless already set" of a variable the role never sets:
			// always set here.
			cond = ""
		}
		if cond != "" {
			if cond == "!has(vars."+k+")" {
				// The "unless already set" idiom: exact.
				expr = fmt.Sprintf("${ has(vars.%s) ? vars.%s : %s }", k, k, unwrap(expr))
			} else {
				tc.approx("set_fact %s with when: where the condition is false and %s was never set, it is null (Ansible: undefined)", k, k)
				if known {
					expr = fmt.Sprintf("${ (%s) ? (%s) : (has(vars.%s) ? vars.%s : null) }", cond, unwrap(expr), k, k)
				} else {
					expr = fmt.Sprintf("${ (%s) ? dyn(%s) : null }", cond, unwrap(expr))
				}
			}
		}
		vars.set(k, expr, "")
	}
	for _, k := range names {
		c.vars[k] = KindUnknown
	}
	for _, k := range []string{"loop", "with_items", "register", "delegate_to", "run_once"} {
		if _, ok := t.Keywords[k]; ok {
			tc.need("set_fact with %s", k)
		}
	}
	out := newMap()
	name := t.Name
	if name == "" {
		name = "set_fact " + strings.Join(names, ", ")
	}
	out.set("name", name, "")
	out.set("vars", vars, "")
	if cm := comment(tc); cm != "" {
		out.n.HeadComment = cm
	}
	c.row(t, out, "vars", tc)
	out.set("block", c.tasks(rest, loopVar), "")
	return out, true
}

// overrideType is the input type of an overridable variable: the type of
// the role variable its value names ("{{ __nginx_user }}" → the type of
// __nginx_user in vars/), string when that is not known.
func (c *converter) overrideType(v any) string {
	s, _ := v.(string)
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{{") || !strings.HasSuffix(s, "}}") {
		return "string"
	}
	ref := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s[2:len(s)-2]), "| list"))
	names := make([]string, 0, len(c.role.VarFiles))
	for f := range c.role.VarFiles {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if vf := c.role.VarFiles[f]; vf.Nodes[ref] != nil {
			if val, err := vf.Value(ref); err == nil {
				return inputType(val)
			}
		}
	}
	return "string"
}

// unwrap is the CEL inside a whole ${ } value.
func unwrap(v string) string {
	s := strings.TrimSpace(v)
	if strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") && strings.Count(s, "${") == 1 {
		return strings.TrimSpace(s[2 : len(s)-1])
	}
	return strconv.Quote(v)
}

// listShape tells what a translated YAML list holds: "plain" (literals
// and maps, nothing to flatten), "exprs" (strings,
// some a whole ${ } expression) or "mixed" (anything else).
func listShape(l []any) string {
	shape := "plain"
	for _, e := range l {
		switch x := e.(type) {
		case string:
			if strings.Contains(x, "${") {
				if unwrap(x) == strconv.Quote(x) {
					return "mixed"
				}
				shape = "exprs"
			}
		case []any:
			return "mixed"
		case map[string]any:
			// A map stays one item, whatever its values.
		}
	}
	if shape == "exprs" {
		for _, e := range l {
			if _, ok := e.(string); !ok {
				return "mixed"
			}
		}
	}
	return shape
}

// celList writes a list of strings, each a whole ${ } expression or a
// literal, as a CEL list.
func celList(l []any) string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = unwrap(e.(string))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// includeVars turns an include_vars of one file of vars/ into a block
// around the tasks after it whose vars: hold the file's variables, as
// Ansible sets them at that point of the run. With when:, the file's
// values are held under a name of their own and each variable takes its
// value from them where the condition holds (elsewhere it keeps the
// value it had). A file name made of a fact that the task's when: pins
// (include_vars: "{{ ansible_os_family }}.yml" when: ansible_os_family ==
// "Debian") is that file. ok is false where this does not apply (the
// task then stays a manual placeholder).
func (c *converter) includeVars(t *Task, rest []*Task, loopVar string) (omap, bool) {
	file := t.FreeForm
	for k, v := range t.Args {
		s, isStr := v.(string)
		if k != "file" || !isStr {
			return omap{}, false
		}
		file = s
	}
	for k := range t.Keywords {
		if k != "when" && k != "tags" {
			return omap{}, false
		}
	}
	tc := &taskConv{}
	sc := c.scope("", loopVar)
	cond := ""
	if n, ok := t.Keywords["when"]; ok {
		tr := TranslateCondition(conditions(n), sc)
		if tr.Manual != "" {
			return omap{}, false
		}
		tc.take(tr, "when")
		cond = tr.CEL
		file = pinnedName(file, n)
	}
	if file == "" || strings.Contains(file, "{{") {
		return omap{}, false
	}
	vf := c.role.VarFiles[strings.TrimPrefix(path.Clean(file), "vars/")]
	if vf == nil {
		return omap{}, false
	}
	values := newMap()
	for _, name := range vf.Names {
		v, err := vf.Value(name)
		if err != nil {
			return omap{}, false
		}
		values.set(name, c.translateAny(v, tc, sc, vf.File+" "+name), "")
	}
	out := newMap()
	out.set("name", nameOr(t), "")
	inner := out
	if cond == "" {
		out.set("vars", values, "")
	} else {
		hold := "__include_" + slugRe.ReplaceAllString(strings.ToLower(strings.TrimSuffix(path.Base(file), path.Ext(file))), "_")
		outer := newMap()
		outer.set(hold, values, "")
		out.set("vars", outer, "")
		picks := newMap()
		for _, name := range vf.Names {
			if _, known := c.vars[name]; known {
				picks.set(name, fmt.Sprintf("${ (%s) ? vars.%s.%s : (has(vars.%s) ? vars.%s : null) }", cond, hold, name, name, name), "")
			} else {
				tc.approx("include_vars %s with when: where the condition is false and %s was never set, it is null (Ansible: undefined)", name, name)
				picks.set(name, fmt.Sprintf("${ (%s) ? vars.%s.%s : null }", cond, hold, name), "")
			}
		}
		inner = newMap()
		inner.set("name", "the variables of "+file+" where "+conditions(t.Keywords["when"]), "")
		inner.set("vars", picks, "")
	}
	for _, name := range vf.Names {
		if v, err := vf.Value(name); err == nil {
			c.vars[name] = valueKind(v)
		}
	}
	if cm := comment(tc); cm != "" {
		out.n.HeadComment = cm
	}
	c.row(t, out, "vars", tc)
	inner.set("block", c.tasks(rest, loopVar), "")
	if cond != "" {
		out.set("block", []omap{inner}, "")
	}
	return out, true
}

// pinnedCond is one when: condition of the form `expr == "literal"`.
var pinnedCond = regexp.MustCompile(`^\s*(.+?)\s*==\s*(?:"([^"]*)"|'([^']*)')\s*$`)
var jinjaOutput = regexp.MustCompile(`\{\{\s*(.+?)\s*\}\}`)

// pinnedName replaces each {{ expr }} of a file name with the literal a
// condition of when (n) pins expr to.
func pinnedName(file string, n *yaml.Node) string {
	conds := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		conds = n.Content
	}
	pins := map[string]string{}
	for _, cn := range conds {
		if m := pinnedCond.FindStringSubmatch(cn.Value); m != nil {
			pins[strings.Join(strings.Fields(m[1]), "")] = m[2] + m[3]
		}
	}
	return jinjaOutput.ReplaceAllStringFunc(file, func(o string) string {
		expr := strings.Join(strings.Fields(jinjaOutput.FindStringSubmatch(o)[1]), "")
		if lit, ok := pins[expr]; ok {
			return lit
		}
		return o
	})
}

// includeByFact expands an include whose file name is made of one fact
// ("setup-{{ ansible_os_family }}.yml") into one block per file of
// tasks/ the name can be, each under a when: on the fact, and a last task
// that fails as Ansible does where the host's value names no file. A
// file only hosts a soul never runs on would include is left out. ok is
// false where the name is not made of one fact with value rewriting.
func (c *converter) includeByFact(file, loopVar string) ([]omap, bool) {
	m := jinjaOutput.FindAllStringSubmatchIndex(file, -1)
	if len(m) != 1 {
		return nil, false
	}
	f := factNamed(file[m[0][2]:m[0][3]])
	if f == nil {
		return nil, false
	}
	prefix, suffix := file[:m[0][0]], file[m[0][1]:]
	var names []string
	for rel := range c.role.TaskFiles {
		if strings.HasPrefix(rel, prefix) && strings.HasSuffix(rel, suffix) && len(rel) > len(prefix)+len(suffix) {
			names = append(names, rel)
		}
	}
	sort.Strings(names)
	var out []omap
	var values []string
	for _, rel := range names {
		lit := strings.TrimSuffix(strings.TrimPrefix(rel, prefix), suffix)
		v, ok := f.Values(lit)
		if !ok {
			if f.Never != nil && f.Never(lit) {
				for _, t := range c.role.TaskFiles[rel] {
					c.skipRows(t, fmt.Sprintf("%s is only included where ansible_%s is %q, which no host a soul runs on reports", rel, f.Ansible, lit))
				}
				continue
			}
			return nil, false
		}
		if c.including[rel] {
			return nil, false
		}
		c.including[rel] = true
		blk := newMap()
		blk.set("name", "include "+rel, "")
		blk.set("when", fmt.Sprintf("%s == %s", f.CEL, strconv.Quote(v)), "")
		blk.set("block", c.tasks(c.role.TaskFiles[rel], loopVar), "")
		delete(c.including, rel)
		out = append(out, blk)
		values = append(values, strconv.Quote(v))
	}
	if len(out) == 0 {
		return nil, false
	}
	fail := newMap()
	fail.set("name", "no "+file+" for this host", "")
	fail.set("module", "core.test.fail", "")
	fail.set("params", map[string]any{"message": fmt.Sprintf("Could not find or access '%s${ %s }%s': Ansible's include_tasks fails where no file is named after the host's %s",
		prefix, f.CEL, suffix, f.Ansible)}, "")
	fail.set("when", fmt.Sprintf("!(%s in [%s])", f.CEL, strings.Join(values, ", ")), "")
	return append(out, fail), true
}

var soleFactRef = regexp.MustCompile(`^(?:ansible_facts\.(\w+)|ansible_facts\[['"](\w+)['"]\]|ansible_(\w+))$`)

// factNamed is the fact with value rewriting an expression reads alone
// (ansible_os_family, ansible_facts.os_family, ansible_facts['os_family']).
func factNamed(expr string) *Fact {
	m := soleFactRef.FindStringSubmatch(strings.Join(strings.Fields(expr), ""))
	if m == nil {
		return nil
	}
	f, ok := lookupFact(m[1] + m[2] + m[3])
	if !ok || f.Values == nil {
		return nil
	}
	return &f
}
