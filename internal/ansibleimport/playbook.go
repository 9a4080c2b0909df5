package ansibleimport

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Play is one play of a playbook.
type Play struct {
	Line  int
	Name  string
	Hosts string
	// Roles are the roles the play applies, in order, with their vars.
	Roles []PlayRole
	// PreTasks, Tasks and PostTasks are the play's own tasks.
	PreTasks, Tasks, PostTasks []*Task
	Handlers                   []*Task
	Keywords                   map[string]*yaml.Node
}

// PlayRole is one entry of a play's roles:.
type PlayRole struct {
	Name string
	Line int
	Vars map[string]any
	When string
}

// playKeys are the play keys the importer knows; others are reported.
var playKeys = map[string]bool{"name": true, "hosts": true, "roles": true, "tasks": true, "pre_tasks": true, "post_tasks": true,
	"handlers": true, "vars": true, "serial": true, "become": true, "become_user": true, "gather_facts": true,
	"max_fail_percentage": true, "any_errors_fatal": true, "tags": true, "vars_files": true, "remote_user": true, "strategy": true}

// LoadPlaybook reads a playbook's plays.
func LoadPlaybook(path string) ([]*Play, error) {
	var doc yaml.Node
	if err := readYAML(path, &doc); err != nil {
		return nil, err
	}
	file := filepath.Base(path)
	root := docRoot(&doc)
	if root == nil || root.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: a playbook is a YAML list of plays", file)
	}
	var plays []*Play
	for _, pn := range root.Content {
		if pn.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: a play must be a map", file, pn.Line)
		}
		p := &Play{Line: pn.Line, Keywords: map[string]*yaml.Node{}}
		for i := 0; i+1 < len(pn.Content); i += 2 {
			k, v := pn.Content[i].Value, pn.Content[i+1]
			var err error
			switch k {
			case "name":
				p.Name = v.Value
			case "hosts":
				p.Hosts = v.Value
				if v.Kind == yaml.SequenceNode {
					var hs []string
					for _, h := range v.Content {
						hs = append(hs, h.Value)
					}
					p.Hosts = strings.Join(hs, ":")
				}
			case "roles":
				p.Roles, err = playRoles(v, file)
			case "tasks":
				p.Tasks, err = parseTasks(v, file)
			case "pre_tasks":
				p.PreTasks, err = parseTasks(v, file)
			case "post_tasks":
				p.PostTasks, err = parseTasks(v, file)
			case "handlers":
				p.Handlers, err = parseTasks(v, file)
			case "import_playbook", "include_playbook":
				return nil, fmt.Errorf("%s:%d: import_playbook is not imported: import each playbook", file, v.Line)
			default:
				p.Keywords[k] = v
			}
			if err != nil {
				return nil, err
			}
		}
		plays = append(plays, p)
	}
	return plays, nil
}

func playRoles(n *yaml.Node, file string) ([]PlayRole, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: roles: must be a list", file, n.Line)
	}
	var out []PlayRole
	for _, r := range n.Content {
		pr := PlayRole{Line: r.Line, Vars: map[string]any{}}
		switch r.Kind {
		case yaml.ScalarNode:
			pr.Name = r.Value
		case yaml.MappingNode:
			for i := 0; i+1 < len(r.Content); i += 2 {
				k, v := r.Content[i].Value, r.Content[i+1]
				switch k {
				case "role", "name":
					pr.Name = v.Value
				case "when":
					pr.When = conditions(v)
				case "vars":
					var m map[string]any
					if err := v.Decode(&m); err != nil {
						return nil, fmt.Errorf("%s:%d: %w", file, v.Line, err)
					}
					for mk, mv := range m {
						pr.Vars[mk] = mv
					}
				case "tags", "become":
				default:
					var val any
					if err := v.Decode(&val); err != nil {
						return nil, fmt.Errorf("%s:%d: %w", file, v.Line, err)
					}
					pr.Vars[k] = val
				}
			}
		default:
			return nil, fmt.Errorf("%s:%d: a role entry is a name or a map", file, r.Line)
		}
		out = append(out, pr)
	}
	return out, nil
}

// findRole locates a role a playbook names: roles/<name> beside the
// playbook, then the dirs given.
func findRole(name, playbookDir string, extra []string) (string, bool) {
	cands := []string{filepath.Join(playbookDir, "roles", name), filepath.Join(playbookDir, name)}
	for _, d := range extra {
		cands = append(cands, filepath.Join(d, name))
	}
	short := name
	if i := strings.LastIndex(name, "."); i >= 0 {
		short = name[i+1:]
	}
	cands = append(cands, filepath.Join(playbookDir, "roles", short))
	for _, c := range cands {
		if exists(filepath.Join(c, "tasks", "main.yml")) {
			return c, true
		}
	}
	return "", false
}

// ImportPlaybook imports a playbook: each role it applies becomes a
// destiny (as ImportRole makes it), and the plays one scenario, site,
// whose steps target the play's hosts as covens.
func ImportPlaybook(path string, roleDirs []string) (*Import, error) {
	plays, err := LoadPlaybook(path)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	im := &Import{Name: strings.ReplaceAll(name, "_", "-"), Files: map[string][]byte{}}
	dir := filepath.Dir(path)
	imported := map[string]*Import{}
	// Roles first: their rows and files, each under destiny/<role>.
	for _, p := range plays {
		for _, pr := range p.Roles {
			if _, done := imported[pr.Name]; done {
				continue
			}
			rd, ok := findRole(pr.Name, dir, roleDirs)
			if !ok {
				return nil, fmt.Errorf("%s:%d: role %s not found in roles/ beside the playbook (give --roles DIR)", filepath.Base(path), pr.Line, pr.Name)
			}
			r, err := LoadRole(rd)
			if err != nil {
				return nil, err
			}
			ri, err := ImportRole(r)
			if err != nil {
				return nil, err
			}
			imported[pr.Name] = ri
			for p, b := range ri.Files {
				if strings.HasPrefix(p, "destiny/") {
					im.Files[p] = b
				}
			}
			im.Rows = append(im.Rows, ri.Rows...)
			im.notes = append(im.notes, ri.notes...)
		}
	}
	c := &converter{role: &Role{Name: im.Name, TaskFiles: map[string][]*Task{}}, vars: map[string]Kind{}, registers: map[string]bool{},
		notifiers: map[string][]string{}, including: map[string]bool{}, slugs: map[string]int{}, outFile: "scenario/site/main.yml",
		inScenario: true}
	var steps []omap
	essence := newMap()
	c.playbook = filepath.Base(path)
	for _, p := range plays {
		steps = append(steps, c.play(p, imported, essence))
	}
	main := newMap()
	main.n.HeadComment = fmt.Sprintf("Imported from the Ansible playbook %s by soulctl import ansible; see IMPORT.md.", filepath.Base(path))
	main.set("input", map[string]any{}, "")
	main.set("tasks", steps, "")
	b, err := marshal(main.n)
	if err != nil {
		return nil, err
	}
	im.Files["scenario/site/main.yml"] = b
	if err := c.locate(main.n); err != nil {
		return nil, err
	}
	im.Rows = append(im.Rows, c.rows...)
	eb, err := marshal(essence.n)
	if err != nil {
		return nil, err
	}
	im.Files["essence/_default.yaml"] = eb
	im.Files["service.yml"] = []byte(fmt.Sprintf("name: %s\ndescription: %q\n", im.Name, "Imported from the Ansible playbook "+filepath.Base(path)))
	im.Files["IMPORT.md"] = im.report(&Role{Name: filepath.Base(path)})
	return im, nil
}

// play converts one play into a block of the scenario targeting its hosts.
func (c *converter) play(p *Play, roles map[string]*Import, essence omap) omap {
	tc := &taskConv{}
	out := newMap()
	name := p.Name
	if name == "" {
		name = "play " + p.Hosts
	}
	out.set("name", name, "")
	switch h := strings.TrimSpace(p.Hosts); {
	case h == "all" || h == "*":
	case strings.ContainsAny(h, "!&*{}[]") || strings.Contains(h, ","):
		tc.need("hosts: %s is an inventory pattern: target with on: covens (an intersection) and where:", h)
	default:
		groups := strings.Split(h, ":")
		if len(groups) > 1 {
			tc.need("hosts: %s is a union of groups; on: [a, b] is their intersection: give the hosts one coven", h)
		}
		out.set("on", []any{groups[0]}, "")
	}
	if n, ok := p.Keywords["serial"]; ok {
		if n.Kind == yaml.SequenceNode {
			tc.need("serial: a list of batch sizes; Soul Stack waves have one size")
		} else if _, err := strconv.Atoi(strings.TrimSuffix(n.Value, "%")); err == nil {
			var v any = n.Value
			if i, err := strconv.Atoi(n.Value); err == nil {
				v = i
			}
			out.set("serial", v, "")
		} else {
			tc.need("serial: %s is not a number or a percentage", n.Value)
		}
	}
	if n, ok := p.Keywords["max_fail_percentage"]; ok && n.Value != "0" {
		tc.approx("max_fail_percentage: %s — a failure on any host stops the rollout (fail-fast; Ansible would go on up to %s%%)", n.Value, n.Value)
	}
	if n, ok := p.Keywords["vars"]; ok {
		c.taskVars(n, out, tc, c.scope("", ""))
	}
	if u := p.Keywords["become_user"]; u != nil && u.Value != "root" {
		tc.need("become_user: %s — a soul runs modules as root", u.Value)
	}
	for k := range p.Keywords {
		if !playKeys[k] {
			tc.need("play keyword %s is not imported", k)
		}
	}
	if s, ok := p.Keywords["strategy"]; ok && s.Value != "linear" {
		tc.approx("strategy: %s — Soul Stack runs each step on all hosts of a wave before the next (linear)", s.Value)
	}
	c.role.Handlers = p.Handlers
	var body []omap
	body = append(body, c.tasks(p.PreTasks, "")...)
	for _, pr := range p.Roles {
		body = append(body, c.applyRole(pr, roles[pr.Name], essence))
	}
	body = append(body, c.tasks(p.Tasks, "")...)
	body = append(body, c.tasks(p.PostTasks, "")...)
	body = append(body, c.handlers()...)
	out.set("block", body, "")
	if cm := comment(tc); cm != "" {
		out.n.HeadComment = cm
	}
	f, notes := tc.fidelity()
	c.rows = append(c.rows, &Row{Upstream: fmt.Sprintf("%s:%d", c.playbook, p.Line), Name: name, Module: "play", Into: "block",
		Fidelity: f, Notes: notes, node: out.n, file: c.outFile})
	return out
}

// applyRole is a play's roles: entry: apply the role's destiny with its
// input from the essence (the play's role vars as the essence's values).
func (c *converter) applyRole(pr PlayRole, ri *Import, essence omap) omap {
	tc := &taskConv{}
	out := newMap()
	out.set("name", "Apply the "+pr.Name+" role", "")
	apply := newMap()
	short := ri.Name
	apply.set("destiny", short, "")
	in := newMap()
	inputs := destinyInputs(ri.Files["destiny/"+short+"/main.yml"])
	for _, name := range inputs {
		in.set(name, "${ essence."+name+" }", "")
		if v, ok := pr.Vars[name]; ok {
			if d, ok := defaultOf(ri.Files["essence/_default.yaml"], name); ok && d != nil && valueKind(d) != valueKind(v) {
				tc.need("role var %s: the role's default is %s, the play gives %s; say which type the input has (destiny/%s/main.yml)", name, inputType(d), inputType(v), short)
			}
			essence.set(name, c.translateAny(v, tc, c.scope("", ""), name), "")
		} else if d, ok := defaultOf(ri.Files["essence/_default.yaml"], name); ok {
			essence.set(name, d, "")
		}
	}
	var extra []string
	for k := range pr.Vars {
		if !contains(inputs, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		tc.need("role var %s is not an input of the destiny (only the role's defaults are)", k)
	}
	if !in.empty() {
		apply.set("input", in, "")
	}
	out.set("apply", apply, "")
	if pr.When != "" {
		tr := TranslateCondition(pr.When, c.scope("", ""))
		tc.take(tr, "when")
		out.set("when", celOrTodo(tr, pr.When), "")
	}
	if cm := comment(tc); cm != "" {
		out.n.HeadComment = cm
	}
	f, notes := tc.fidelity()
	c.rows = append(c.rows, &Row{Upstream: fmt.Sprintf("%s:%d", c.playbook, pr.Line), Name: "role " + pr.Name, Module: "role", Into: "apply",
		Fidelity: f, Notes: notes, node: out.n, file: c.outFile})
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// destinyInputs lists the input names of a written destiny main.yml.
func destinyInputs(main []byte) []string {
	var doc yaml.Node
	if yaml.Unmarshal(main, &doc) != nil {
		return nil
	}
	in := lookupPath(&doc, "input")
	if in == nil || in.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(in.Content); i += 2 {
		out = append(out, in.Content[i].Value)
	}
	return out
}

func defaultOf(essence []byte, name string) (any, bool) {
	var m map[string]any
	if yaml.Unmarshal(essence, &m) != nil {
		return nil, false
	}
	v, ok := m[name]
	return v, ok
}

// IsPlaybook tells a playbook file from a role directory.
func IsPlaybook(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}
