package dsl

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"

	"github.com/soulstack/soulstack/internal/expr"
	"go.yaml.in/yaml/v3"
)

var (
	// commonTaskKeys are the task keys of SPEC §5 (destiny core).
	commonTaskKeys = []string{
		"name", "module", "params", "block", "include", "vars", "register", "when",
		"onchanges", "onfail", "require", "loop", "retry", "failed_when", "changed_when", "timeout",
		"vars_files",
	}
	// scenarioTaskKeys are the orchestration delta of SPEC §6.
	scenarioTaskKeys = []string{"on", "where", "apply", "serial", "run_once", "delegate"}
	actionKeys       = []string{"module", "apply", "block", "include"}
)

// taskList parses a list of tasks; prefix is the Path of the enclosing
// block ("" at the top).
func (p *parser) taskList(u *unit, file string, n *yaml.Node, what, prefix string) []*Task {
	items, ok := p.sequence(file, n, what)
	if !ok {
		return nil
	}
	var out []*Task
	for _, it := range items {
		out = append(out, p.task(u, file, it)...)
	}
	for i, t := range out {
		setPath(t, joinPath(prefix, i))
	}
	return out
}

func joinPath(prefix string, i int) string {
	if prefix == "" {
		return strconv.Itoa(i)
	}
	return prefix + "." + strconv.Itoa(i)
}

func setPath(t *Task, p string) {
	t.Path = p
	for i, c := range t.Block {
		setPath(c, joinPath(p, i))
	}
}

// task parses one task. An include without other keys returns the spliced
// tasks of the neighbour file.
func (p *parser) task(u *unit, file string, n *yaml.Node) []*Task {
	ents, ok := p.mapping(file, n, "a task")
	if !ok {
		return nil
	}
	t := &Task{Pos: posOf(file, deref(n)), KeyPos: map[string]Pos{}}
	v := map[string]*yaml.Node{}
	present := map[string]bool{}
	for _, e := range ents {
		present[e.key] = true
		switch {
		case slices.Contains(commonTaskKeys, e.key):
		case slices.Contains(scenarioTaskKeys, e.key):
			if u.kind == expr.KindDestiny {
				p.add(e.kpos, e.key, scenarioOnlyMessage(e.key))
				continue
			}
		default:
			p.add(e.kpos, e.key, fmt.Sprintf("unknown key %s in task%s", e.key, suggest(e.key, append(slices.Clone(commonTaskKeys), scenarioTaskKeys...))))
			continue
		}
		v[e.key] = e.value
		t.KeyPos[e.key] = e.kpos
	}
	if nn, ok := v["name"]; ok {
		t.Name, _ = p.str(file, nn, "name")
	}
	p.taskAction(u, file, t, v, present)

	// Static types: the loop element type is item (SPEC §7); the task's
	// vars are visible to its own expressions and to a block's tasks.
	saved := u.types
	u.types.vars = maps.Clone(u.types.vars)
	defer func() {
		regs := u.types.regs
		u.types = saved
		u.types.regs = regs
	}()
	var itemType *cel.Type
	var itemShape *expr.Shape
	if nn, ok := v["loop"]; ok {
		u.types.item, u.types.itemShape, u.types.noItem = nil, nil, ""
		t.Loop, itemType, itemShape = p.loop(u, file, nn)
		if present["block"] || (present["include"] && !onlyKeys(v, "include", "name", "loop")) {
			p.add(t.KeyPos["loop"], "loop", "loop: on a block is not supported: put loop: on the tasks inside the block that repeat (each sees item), or move the block's tasks into a destiny and loop over the values in one task per value")
		}
		u.types.noItem = "item and loop_index are only set while the loop runs, not in where:, failed_when: or changed_when: (which see the whole loop's result in register.self.results)"
	}
	withItem := func(on bool) {
		if on && itemType != nil {
			u.types.item, u.types.itemShape = itemType, itemShape
		} else {
			u.types.item, u.types.itemShape = nil, nil
		}
	}

	// Keys evaluated before the task runs see earlier registers only.
	before := templateOpts{}
	withItem(false)
	if nn, ok := v["register"]; ok {
		t.Register = p.registerName(file, nn)
	}
	if nn, ok := v["on"]; ok {
		t.On = p.on(file, nn)
	}
	if nn, ok := v["where"]; ok {
		t.Where = p.predicate(u, file, nn, "where", before)
	}
	if nn, ok := v["delegate"]; ok {
		t.Delegate = p.delegate(u, file, t, nn, present)
		// Everything evaluated when the task runs on a delegate sees
		// delegated_for; where: chose the wave's hosts before that.
		u.types.delegated = t.Delegate != nil
	}
	withItem(true)
	if nn, ok := v["vars_files"]; ok {
		t.VarsFiles = p.varsFiles(u, file, nn, "vars_files")
	}
	// The task's vars: are rendered before when: and params (and per
	// item), so those see their types; where: was evaluated before them.
	if nn, ok := v["vars"]; ok {
		t.Vars = p.varsMap(u, file, nn, "vars", false)
	}
	if nn, ok := v["when"]; ok {
		t.When = p.predicate(u, file, nn, "when", before)
	}
	if nn, ok := v["serial"]; ok {
		t.Serial = p.serial(file, nn)
	}
	if nn, ok := v["run_once"]; ok {
		t.RunOnce, _ = p.boolean(file, nn, "run_once")
	}
	if t.Serial != nil && t.RunOnce {
		p.add(t.KeyPos["run_once"], "run_once", "serial: and run_once: are exclusive: run_once runs on one host, so there are no waves; drop one of them")
	}
	if nn, ok := v["onchanges"]; ok {
		t.Onchanges = p.requisites(u, file, nn, "onchanges")
	}
	if nn, ok := v["onfail"]; ok {
		t.Onfail = p.requisites(u, file, nn, "onfail")
	}
	if nn, ok := v["require"]; ok {
		t.Require = p.requisites(u, file, nn, "require")
	}
	if nn, ok := v["timeout"]; ok {
		t.Timeout = p.duration(file, nn, "timeout", false)
	}
	p.taskBody(u, file, t, v)

	// Keys evaluated on the task's own result also see its own register.
	after := templateOpts{allowSelf: true, own: t.Register}
	u.types.self = resultShape(u, t)
	if t.Register != "" {
		u.types.regs[t.Register] = resultShape(u, t)
	}
	if nn, ok := v["retry"]; ok {
		t.Retry = p.retry(u, file, nn, after)
	}
	withItem(false)
	if nn, ok := v["failed_when"]; ok {
		t.FailedWhen = p.predicate(u, file, nn, "failed_when", after)
	}
	if nn, ok := v["changed_when"]; ok {
		t.ChangedWhen = p.predicate(u, file, nn, "changed_when", after)
	}
	if t.Register != "" {
		if prev, dup := u.registered[t.Register]; dup {
			p.add(keyPos(t, "register"), "register", fmt.Sprintf("register %s is already defined by the task at %s: give each task its own register name", t.Register, prev))
		} else {
			u.registered[t.Register] = t.Pos
		}
		u.defined[t.Register] = true
		u.all[t.Register] = true
	}
	if t.Include != "" && onlyKeys(v, "include", "name") {
		return t.Block
	}
	return []*Task{t}
}

// keyPos is the position of key k on t, or of t when k was not recorded.
func keyPos(t *Task, k string) Pos {
	if p, ok := t.KeyPos[k]; ok {
		return p
	}
	return t.Pos
}

func onlyKeys(v map[string]*yaml.Node, keys ...string) bool {
	for k := range v {
		if !slices.Contains(keys, k) {
			return false
		}
	}
	return true
}

func scenarioOnlyMessage(key string) string {
	switch key {
	case "apply":
		return "apply: is scenario-only: a destiny cannot apply another destiny; inline its tasks or apply both from the scenario"
	case "on", "where", "serial", "run_once":
		return key + ": is scenario-only: a destiny runs on the host it is applied to; put targeting on the scenario task that applies it"
	case "delegate":
		return "delegate: is scenario-only: a destiny runs on the host it is applied to; delegate the scenario task inside a serial: block instead"
	}
	return key + ": is scenario-only"
}

// taskAction checks that exactly one of module/apply/block/include is
// given.
// present holds every key given, including ones already reported as not
// allowed here, so a destiny task with apply: is not also "doing nothing".
func (p *parser) taskAction(u *unit, file string, t *Task, v map[string]*yaml.Node, present map[string]bool) {
	var given []string
	for _, k := range actionKeys {
		if present[k] {
			given = append(given, k)
		}
	}
	switch {
	case len(given) == 0:
		what := "task"
		if t.Name != "" {
			what = fmt.Sprintf("task %q", t.Name)
		}
		keys := "module:, block: or include:"
		if u.kind == expr.KindScenario {
			keys = "module:, apply:, block: or include:"
		}
		p.add(t.Pos, "", fmt.Sprintf("%s does nothing: give it exactly one of %s", what, keys))
	case slices.Contains(given, "apply") && slices.Contains(given, "module"):
		p.add(keyPos(t, "apply"), "apply", "apply: and module: are exclusive: a task either calls a module or applies a destiny; split it into two tasks")
	case len(given) > 1:
		p.add(keyPos(t, given[1]), given[1], fmt.Sprintf("a task takes exactly one of module:, apply:, block:, include:, but this one has %s: split it into separate tasks", strings.Join(given, " and ")))
	}
	if _, ok := v["params"]; ok && !slices.Contains(given, "module") {
		p.add(t.KeyPos["params"], "params", "params: only goes with module:; apply: takes its values under apply.input")
	}
}

// taskBody parses the action: module and params, apply, block, include.
func (p *parser) taskBody(u *unit, file string, t *Task, v map[string]*yaml.Node) {
	if nn, ok := v["module"]; ok {
		p.moduleCall(u, file, t, nn, v["params"])
	}
	if nn, ok := v["apply"]; ok && u.kind == expr.KindScenario {
		t.Apply = p.apply(u, file, t, nn)
	}
	if t.Serial != nil {
		// The tasks inside see the wave: delegate: is allowed there.
		u.serialDepth++
		defer func() { u.serialDepth-- }()
	}
	if nn, ok := v["block"]; ok {
		t.Block = p.taskList(u, file, nn, "block", "")
		if len(t.Block) == 0 {
			p.add(t.KeyPos["block"], "block", "block: is empty: give it the tasks to run")
		}
	}
	if nn, ok := v["include"]; ok {
		p.include(u, file, t, nn)
	}
	if t.On != nil && t.On.Keeper && t.Apply != nil {
		p.add(t.KeyPos["on"], "on", "on: keeper cannot apply a destiny: destinies run on souls; call a keeper-side module instead")
	}
}

// include splices the tasks of a neighbour file into t.Block.
func (p *parser) include(u *unit, file string, t *Task, n *yaml.Node) {
	name, ok := p.str(file, n, "include")
	if !ok {
		return
	}
	pos := posOf(file, deref(n))
	ext := path.Ext(name)
	switch {
	case strings.ContainsAny(name, `/\`) || name == ".." || name == ".":
		p.add(pos, "include", fmt.Sprintf("include: %s must name a neighbour file in %s (no directories)", name, u.dir))
		return
	case ext != ".yml" && ext != ".yaml":
		p.add(pos, "include", fmt.Sprintf("include: %s must be a .yml file", name))
		return
	case name == "main.yml" || name == "vars.yml":
		p.add(pos, "include", fmt.Sprintf("include: %s cannot be included: it is not a task list", name))
		return
	}
	data, ok := u.files[name]
	if !ok {
		p.add(pos, "include", fmt.Sprintf("include: %s does not exist in %s%s", name, u.dir, suggest(name, neighbourFiles(u.files))))
		return
	}
	if i := slices.Index(u.including, name); i >= 0 {
		chain := append(slices.Clone(u.including[i:]), name)
		p.add(pos, "include", "include cycle: "+strings.Join(chain, " → "))
		return
	}
	t.Include = name
	u.including = append(u.including, name)
	defer func() { u.including = u.including[:len(u.including)-1] }()
	nfile := u.file(name)
	root, ok := p.parseYAML(nfile, data)
	if !ok || root == nil {
		return
	}
	if deref(root).Kind != yaml.SequenceNode {
		p.add(posOf(nfile, root), "", fmt.Sprintf("%s is included as tasks, so it must be a list of tasks, got %s", name, kindName(root)))
		return
	}
	t.Block = p.taskList(u, nfile, root, name, "")
}

func neighbourFiles(files map[string][]byte) []string {
	var out []string
	for f := range files {
		if !strings.Contains(f, "/") {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}
