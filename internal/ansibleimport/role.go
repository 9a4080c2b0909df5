package ansibleimport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Role is an Ansible role read from its directory: what the importer turns
// into a destiny.
type Role struct {
	Name string
	Dir  string
	// Tasks are tasks/main.yml with includes kept as tasks (the converter
	// resolves include_tasks/import_tasks against TaskFiles).
	Tasks []*Task
	// TaskFiles are every file under tasks/, parsed, by path relative to
	// tasks/ ("setup-Debian.yml").
	TaskFiles map[string][]*Task
	// Handlers are handlers/main.yml.
	Handlers []*Task
	// Defaults are defaults/main.yml, in file order.
	Defaults *Vars
	// VarFiles are the files of vars/, by name ("main.yml", "Debian.yml").
	VarFiles map[string]*Vars
	// Templates and Files list the paths under templates/ and files/.
	Templates, Files []string
	// ArgSpecs is meta/argument_specs.yml's main entry point, when present.
	ArgSpecs *yaml.Node
}

// Vars is one variables file in its order, with where each value is.
type Vars struct {
	File  string
	Names []string
	Nodes map[string]*yaml.Node
}

// Value decodes the value of name.
func (v *Vars) Value(name string) (any, error) {
	var out any
	if err := v.Nodes[name].Decode(&out); err != nil {
		return nil, fmt.Errorf("%s:%d: %s: %w", v.File, v.Nodes[name].Line, name, err)
	}
	return out, nil
}

// LoadRole reads the role at dir.
func LoadRole(dir string) (*Role, error) {
	st, err := os.Stat(filepath.Join(dir, "tasks", "main.yml"))
	if err != nil || st.IsDir() {
		return nil, fmt.Errorf("%s is not an Ansible role: it has no tasks/main.yml", dir)
	}
	r := &Role{Name: roleName(dir), Dir: dir, TaskFiles: map[string][]*Task{}, VarFiles: map[string]*Vars{}}
	taskDir := filepath.Join(dir, "tasks")
	err = filepath.WalkDir(taskDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isYAML(p) {
			return err
		}
		rel, _ := filepath.Rel(taskDir, p)
		ts, err := LoadTasks(p, "tasks/"+filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		r.TaskFiles[filepath.ToSlash(rel)] = ts
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Tasks = r.TaskFiles["main.yml"]
	if h := filepath.Join(dir, "handlers", "main.yml"); exists(h) {
		if r.Handlers, err = LoadTasks(h, "handlers/main.yml"); err != nil {
			return nil, err
		}
	}
	if d := firstYAML(filepath.Join(dir, "defaults"), "main"); d != "" {
		if r.Defaults, err = loadVars(d, "defaults/"+filepath.Base(d)); err != nil {
			return nil, err
		}
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "vars")); err == nil {
		for _, e := range ents {
			if e.IsDir() || !isYAML(e.Name()) {
				continue
			}
			v, err := loadVars(filepath.Join(dir, "vars", e.Name()), "vars/"+e.Name())
			if err != nil {
				return nil, err
			}
			r.VarFiles[e.Name()] = v
		}
	}
	if r.Templates, err = listFiles(filepath.Join(dir, "templates")); err != nil {
		return nil, err
	}
	if r.Files, err = listFiles(filepath.Join(dir, "files")); err != nil {
		return nil, err
	}
	if a := firstYAML(filepath.Join(dir, "meta"), "argument_specs"); a != "" {
		var doc yaml.Node
		if err := readYAML(a, &doc); err != nil {
			return nil, err
		}
		r.ArgSpecs = lookupPath(&doc, "argument_specs", "main")
	}
	return r, nil
}

// roleName is the role's name from its directory: geerlingguy.redis and
// ansible-role-redis both give redis.
func roleName(dir string) string {
	n := filepath.Base(filepath.Clean(dir))
	n = strings.TrimPrefix(n, "ansible-role-")
	if i := strings.LastIndex(n, "."); i >= 0 {
		n = n[i+1:]
	}
	return strings.ReplaceAll(n, "_", "-")
}

func isYAML(p string) bool { return strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml") }

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// firstYAML returns dir/base.yml or dir/base.yaml, or "".
func firstYAML(dir, base string) string {
	for _, ext := range []string{".yml", ".yaml"} {
		if p := filepath.Join(dir, base+ext); exists(p) {
			return p
		}
	}
	return ""
}

func listFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	return out, err
}

func readYAML(path string, n *yaml.Node) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, n); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func loadVars(path, rel string) (*Vars, error) {
	var doc yaml.Node
	if err := readYAML(path, &doc); err != nil {
		return nil, err
	}
	v := &Vars{File: rel, Nodes: map[string]*yaml.Node{}}
	m := docRoot(&doc)
	if m == nil || (m.Kind == yaml.ScalarNode && m.Tag == "!!null") {
		return v, nil // empty, or only comments: Ansible reads no variables
	}
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: a variables file must be a map", rel, m.Line)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		name := m.Content[i].Value
		if _, dup := v.Nodes[name]; !dup {
			v.Names = append(v.Names, name)
		}
		v.Nodes[name] = m.Content[i+1]
	}
	return v, nil
}

// docRoot is the top node of a YAML document, nil when it is empty.
func docRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0]
	}
	if doc.Kind == 0 {
		return nil
	}
	return doc
}

// lookupPath walks map keys from n's document root.
func lookupPath(n *yaml.Node, keys ...string) *yaml.Node {
	n = docRoot(n)
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}
