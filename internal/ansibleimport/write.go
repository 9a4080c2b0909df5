package ansibleimport

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Import is a role turned into a service repository.
type Import struct {
	// Name is the service's (and destiny's) name.
	Name string
	// Files are the repository's files by path ("destiny/redis/main.yml").
	Files map[string][]byte
	// Rows are the report, one per upstream task, in upstream order.
	Rows []*Row
	// notes are findings about the role that are not one task's.
	notes []string
}

// Counts returns how many rows have each fidelity.
func (im *Import) Counts() map[Fidelity]int {
	out := map[Fidelity]int{}
	for _, r := range im.Rows {
		out[r.Fidelity]++
	}
	return out
}

// ImportRole turns a role into a service repository: a destiny holding the
// role's tasks and handlers inside one block whose vars: are the role's
// variables (so templates read them by their names, as in Ansible), its
// defaults as typed input fed from the essence, and a scenario `create` (what `incarnation create` and drift run).
func ImportRole(r *Role) (*Import, error) {
	c := newConverter(r)
	im := &Import{Name: r.Name, Files: map[string][]byte{}}
	dd := "destiny/" + r.Name
	c.outFile = dd + "/main.yml"

	input, blockVars, essence := c.defaults(im)
	varsFiles := c.hoistIncludeVars(im, dd)
	body := c.tasks(r.Tasks, "")
	body = append(body, c.handlers()...)
	for _, name := range sortedKeys(c.overrides) {
		spec := newMap()
		spec.set("type", c.overrides[name], "")
		spec.set("description", "set it to override what the role picks for the host's OS (null: the role's choice)", "")
		input.set(name, spec, "")
		essence.set(name, nil, "")
		blockVars.set(name, "${ input."+name+" }", "")
	}

	c.templateFacts(im, blockVars)
	blk := newMap()
	blk.set("name", r.Name+" (imported role)", "")
	if !blockVars.empty() {
		blk.set("vars", blockVars, "")
	}
	blk.set("block", body, "")
	main := newMap()
	if !input.empty() {
		main.set("input", input, "")
	} else {
		main.set("input", map[string]any{}, "")
	}
	if len(varsFiles) > 0 {
		main.set("vars_files", varsFiles, "")
	}
	main.set("tasks", []omap{blk}, "")
	main.n.HeadComment = fmt.Sprintf("Imported from the Ansible role %s by soulctl import ansible; see IMPORT.md.", r.Name)
	b, err := marshal(main.n)
	if err != nil {
		return nil, err
	}
	im.Files[dd+"/main.yml"] = b
	if err := c.locate(main.n); err != nil {
		return nil, err
	}
	im.Rows = c.rows

	if err := c.copyDir(im, "templates", dd+"/templates"); err != nil {
		return nil, err
	}
	if err := c.copyDir(im, "files", dd+"/files"); err != nil {
		return nil, err
	}
	if err := c.writeVarFiles(im, dd); err != nil {
		return nil, err
	}
	eb, err := marshal(essence.n)
	if err != nil {
		return nil, err
	}
	im.Files["essence/_default.yaml"] = eb
	im.Files["service.yml"] = []byte(fmt.Sprintf("name: %s\ndescription: %q\n", r.Name, "Imported from the Ansible role "+r.Name))
	if err := c.scenario(im, input); err != nil {
		return nil, err
	}
	im.Files["IMPORT.md"] = im.report(r)
	return im, nil
}

// defaults makes the destiny's input (literal defaults, typed), the block
// vars that give every role variable its name, and the essence.
func (c *converter) defaults(im *Import) (input, blockVars, essence omap) {
	input, blockVars, essence = newMap(), newMap(), newMap()
	if c.role.Defaults == nil {
		return input, blockVars, essence
	}
	for _, name := range c.role.Defaults.Names {
		v, err := c.role.Defaults.Value(name)
		if err != nil {
			continue
		}
		tc := &taskConv{}
		if s, ok := v.(string); ok && (strings.Contains(s, "{{") || strings.Contains(s, "{%")) {
			tr := TranslateValue(s, c.scope("", ""))
			tc.take(tr, "defaults "+name)
			cm := ""
			if f, notes := tc.fidelity(); f != Exact {
				cm = "import: " + string(f) + ": " + strings.Join(notes, "; ")
			}
			blockVars.set(name, valueOrTodo(tr, s), cm)
			continue
		}
		spec := newMap()
		typ, desc := inputType(v), ""
		if o := c.argSpec(name); o != nil {
			if t := specType(o); t != "" {
				typ = t
			}
			if d := lookupPath(o, "description"); d != nil {
				desc = d.Value
			}
		}
		spec.set("type", typ, "")
		if v != nil {
			spec.set("default", v, "")
		}
		if desc != "" {
			spec.set("description", desc, "")
		}
		input.set(name, spec, "")
		essence.set(name, v, "")
		blockVars.set(name, "${ input."+name+" }", "")
	}
	return input, blockVars, essence
}

// argSpec is the argument_specs option of name, if the role has one.
func (c *converter) argSpec(name string) *yaml.Node {
	if c.role.ArgSpecs == nil {
		return nil
	}
	return lookupPath(c.role.ArgSpecs, "options", name)
}

// specType maps an argument_specs type to an input type ("" when it has
// no single equivalent: raw).
func specType(o *yaml.Node) string {
	t := lookupPath(o, "type")
	if t == nil {
		return "string"
	}
	return map[string]string{"str": "string", "path": "string", "int": "integer", "bool": "boolean", "float": "number",
		"list": "list", "dict": "map"}[t.Value]
}

func inputType(v any) string {
	switch valueKind(v) {
	case KindBool:
		return "boolean"
	case KindInt:
		return "integer"
	case KindFloat:
		return "number"
	case KindList:
		return "list"
	case KindMap:
		return "map"
	}
	return "string"
}

// hoistIncludeVars turns the include_vars at the head of tasks/main.yml
// into the destiny's vars_files (first found wins), as Ansible's
// OS-specific variables idiom means it.
func (c *converter) hoistIncludeVars(im *Import, dd string) []any {
	var out []any
	if c.role.VarFiles["main.yml"] != nil {
		out = append(out, "vars/main.yml")
	}
	for len(c.role.Tasks) > 0 {
		t := c.role.Tasks[0]
		if t.Module != "include_vars" || len(t.Keywords) > 0 {
			break
		}
		c.role.Tasks = c.role.Tasks[1:]
		tc := &taskConv{}
		file := t.FreeForm
		if f, ok := t.Args["file"].(string); ok {
			file = f
		}
		sc := c.scope("", "")
		sc.RawFacts = true
		tr := TranslateValue(file, sc)
		tc.take(tr, "include_vars")
		if strings.Contains(file, "{{") {
			f := factInName(file)
			if f == nil {
				tc.need("the vars file name is an expression not made of one fact")
			} else {
				c.varFileFact = f
			}
		}
		entry := "vars/" + strings.TrimPrefix(valueOrTodo(tr, file), "vars/")
		out = append(out, entry)
		row := newMap()
		row.set("vars_files", entry, "")
		c.rows = append(c.rows, &Row{Upstream: fmt.Sprintf("%s:%d", t.File, t.Line), Name: nameOr(t), Module: t.FQCN, Into: "vars_files",
			Fidelity: fidelityOf(tc), Notes: notesOf(tc), file: c.outFile, hoisted: true})
	}
	return out
}

// factInName returns the fact a vars file name is made of
// ("{{ ansible_facts.os_family }}.yml"), when it has value rewriting.
func factInName(file string) *Fact {
	tr := TranslateValue(file, Scope{RawFacts: true})
	if tr.Manual != "" {
		return nil
	}
	for _, f := range FactTable() {
		if f.Values != nil && strings.Contains(tr.CEL, "${ "+f.CEL+" }") {
			return &f
		}
	}
	return nil
}

func nameOr(t *Task) string {
	if t.Name != "" {
		return t.Name
	}
	return t.Module
}

func fidelityOf(tc *taskConv) Fidelity { f, _ := tc.fidelity(); return f }
func notesOf(tc *taskConv) []string    { _, n := tc.fidelity(); return n }

// handlers converts the role's handlers into tasks at the end that run on
// a host when a task notifying them changed there (onchanges).
func (c *converter) handlers() []omap {
	var out []omap
	for _, h := range c.role.Handlers {
		watch := append([]string(nil), c.notifiers[h.Name]...)
		if l := h.keyword("listen"); l != "" {
			watch = append(watch, c.notifiers[l]...)
		}
		watch = dedupe(watch)
		if len(watch) == 0 {
			c.rows = append(c.rows, &Row{Upstream: fmt.Sprintf("%s:%d", h.File, h.Line), Output: "(left out)", Name: nameOr(h), Module: h.FQCN,
				Fidelity: Exact, Notes: []string{"no task notifies it: not imported"}, file: c.outFile})
			continue
		}
		t := c.moduleTask(h, "")
		if len(notifies(h)) > 0 {
			r := c.rows[len(c.rows)-1]
			r.Notes = append(r.Notes, "a handler notifying a handler: the chain holds only for handlers defined after it")
			if r.Fidelity == Exact {
				r.Fidelity = Approximated
			}
		}
		on := make([]any, len(watch))
		for i, w := range watch {
			on[i] = w
		}
		t.set("onchanges", on, "")
		out = append(out, t)
	}
	return out
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// locate fills each row's output file:line from the written tree.
func (c *converter) locate(tree *yaml.Node) error {
	ln, err := lines(tree)
	if err != nil {
		return err
	}
	for _, r := range c.rows {
		switch {
		case r.node != nil:
			r.Output = fmt.Sprintf("%s:%d", r.file, ln[r.node])
		case r.hoisted:
			r.Output = r.file + " (vars_files)"
		}
	}
	return nil
}

// copyDir copies a role directory (templates/, files/) unchanged.
func (c *converter) copyDir(im *Import, sub, to string) error {
	var list []string
	switch sub {
	case "templates":
		list = c.role.Templates
	case "files":
		list = c.role.Files
	}
	for _, p := range list {
		b, err := os.ReadFile(filepath.Join(c.role.Dir, sub, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		im.Files[path.Join(to, p)] = b
	}
	return nil
}

// writeVarFiles writes vars/ with Jinja values translated; with an
// OS-specific include_vars the files are named as soulprint spells the
// values (Debian.yml → debian.yml).
func (c *converter) writeVarFiles(im *Import, dd string) error {
	names := make([]string, 0, len(c.role.VarFiles))
	for n := range c.role.VarFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := c.role.VarFiles[n]
		out := newMap()
		tc := &taskConv{}
		for _, name := range v.Names {
			val, err := v.Value(name)
			if err != nil {
				return err
			}
			out.set(name, c.translateAny(val, tc, c.scope("", ""), v.File+" "+name), "")
		}
		if f, notes := tc.fidelity(); f != Exact {
			out.n.HeadComment = "import: " + string(f) + ": " + strings.Join(notes, "; ")
		}
		b, err := marshal(out.n)
		if err != nil {
			return err
		}
		file := n
		if f := c.varFileFact; f != nil && n != "main.yml" {
			base := strings.TrimSuffix(strings.TrimSuffix(n, ".yml"), ".yaml")
			if v, ok := f.Values(base); ok {
				file = v + ".yml"
			} else {
				im.notes = append(im.notes, fmt.Sprintf("vars/%s: soulprint has no %s value %q, so no host reads it", n, f.Ansible, base))
			}
		}
		im.Files[dd+"/vars/"+file] = b
	}
	return nil
}

// scenario writes scenario/create: the destiny applied with the essence as
// its input.
func (c *converter) scenario(im *Import, input omap) error {
	in := newMap()
	for i := 0; i+1 < len(input.n.Content); i += 2 {
		name := input.n.Content[i].Value
		in.set(name, "${ essence."+name+" }", "")
	}
	apply := newMap()
	apply.set("destiny", c.role.Name, "")
	if !in.empty() {
		apply.set("input", in, "")
	}
	task := newMap()
	task.set("name", "Apply the "+c.role.Name+" role", "")
	task.set("apply", apply, "")
	main := newMap()
	main.set("input", map[string]any{}, "")
	main.set("tasks", []omap{task}, "")
	main.n.HeadComment = "Applies the imported role to every member of the incarnation; the essence overrides the role's defaults."
	b, err := marshal(main.n)
	if err != nil {
		return err
	}
	im.Files["scenario/create/main.yml"] = b
	im.Files["scenario/create/tests/applies_to_every_member.yml"] = []byte(fmt.Sprintf(`# Generated by soulctl import ansible: run it with soulctl scenario test.
description: >
  The imported role %[1]s is applied to every member of the incarnation,
  all at once, and the run commits.
hosts:
  - {sid: host-1, covens: [%[1]s], facts: {os: {family: debian}}}
  - {sid: host-2, covens: [%[1]s], facts: {os: {family: debian}}}
incarnation:
  name: %[1]s
  covens: [%[1]s]
expect:
  outcome: succeeded
  status: ready
  tasks:
    - task: Apply the %[1]s role
      ran: [host-1, host-2]
      waves: [[host-1, host-2]]
`, c.role.Name))
	return nil
}

// WriteTo writes the repository into dir, which must not exist or be
// empty: the files are written in a directory beside it and renamed into
// place, so a failed import leaves nothing half-written.
func (im *Import) WriteTo(dir string) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s is not empty: import into a new directory", dir)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	tmp, err := os.MkdirTemp(parent, ".import-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	paths := make([]string, 0, len(im.Files))
	for p := range im.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, im.Files[p], 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	_ = os.Remove(dir) // an empty directory the caller made
	return os.Rename(tmp, dir)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var factRef = regexp.MustCompile(`ansible_facts\.([a-z_0-9]+)|ansible_facts\[['"]([a-z_0-9]+)['"]\]|\bansible_([a-z_0-9]+)`)

// templateFacts gives the role's templates (copied unchanged, rendered by
// the Jinja engine) the facts they read, as block vars: ansible_facts
// (a map of the facts read as ansible_facts.x) and ansible_<x>, each from
// soulprint through the fact table, spelt as Ansible spells it. A fact
// the table has no value for is named in the report's notes.
func (c *converter) templateFacts(im *Import, blockVars omap) {
	used := map[string]bool{}
	managed := false
	for _, rel := range c.role.Templates {
		b, err := os.ReadFile(filepath.Join(c.role.Dir, "templates", rel))
		if err != nil {
			continue
		}
		managed = managed || strings.Contains(string(b), "ansible_managed")
		for _, m := range factRef.FindAllStringSubmatch(string(b), -1) {
			switch {
			case m[1] != "":
				used[m[1]] = true
			case m[2] != "":
				used[m[2]] = true
			case m[3] != "" && m[3] != "facts" && m[3] != "managed":
				used["ansible_"+m[3]] = true
			}
		}
	}
	if managed {
		// Ansible's default, so that a migrated host's files stay byte
		// for byte what Ansible wrote (the engine's own is "Soul Stack
		// managed").
		blockVars.set("ansible_managed", "Ansible managed", "the role's templates read it; Ansible's default value")
	}
	if len(used) == 0 {
		return
	}
	value := func(name string) (string, bool) {
		f, ok := lookupFact(name)
		if !ok || f.CEL == "" {
			return "", false
		}
		if f.Lost != "" {
			im.notes = append(im.notes, fmt.Sprintf("templates read ansible_%s: %s", name, f.Lost))
		}
		code := f.CEL
		if f.Values != nil {
			if sp := spelling(f, code); sp != "" {
				code = sp
			}
		}
		return code, true
	}
	facts := newMap()
	for _, name := range sortedKeys(used) {
		if strings.HasPrefix(name, "ansible_") {
			continue
		}
		if code, ok := value(name); ok {
			facts.set(name, "${ "+code+" }", "")
		} else {
			im.notes = append(im.notes, fmt.Sprintf("templates read ansible_facts.%s, which has no soulprint equivalent: rendering fails where it is read", name))
		}
	}
	if !facts.empty() {
		blockVars.set("ansible_facts", facts, "")
	}
	for _, name := range sortedKeys(used) {
		short, ok := strings.CutPrefix(name, "ansible_")
		if !ok {
			continue
		}
		if code, ok := value(short); ok {
			blockVars.set(name, "${ "+code+" }", "")
		}
	}
}
