package dsl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/module/custom"
	"go.yaml.in/yaml/v3"
)

// maxFileSize bounds one file of a service repository.
const maxFileSize = 4 << 20

// identRE is what register names, input names and vars names look like: a
// CEL identifier.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// unitNameRE is what scenario and destiny directory names look like.
var unitNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// parser collects the problems of one repository (or bundle).
type parser struct {
	// fsys is the whole repository (nil for a destiny bundle on a soul):
	// vars_files may name files outside the unit's directory in it.
	fsys     fs.FS
	problems Problems
	// warnings are advice that does not fail validation (Service.Warnings).
	warnings Problems
	// nodes counts YAML nodes visited, against maxNodes.
	nodes int
	// unread are the files found but not read (too large, unreadable),
	// already reported: a unit whose main.yml is one of them is not also
	// said to have none.
	unread map[string]bool
	// brokenMods are the custom modules whose directory has problems
	// (reported once there, not again at every task calling them).
	brokenMods map[string]bool
	// order records the key order of every YAML map read as a value.
	order *expr.KeyOrder
}

// skip records a file found but not read, with the problem saying why.
func (p *parser) skip(name, msg string) {
	if p.unread == nil {
		p.unread = map[string]bool{}
	}
	p.unread[name] = true
	p.add(Pos{File: name}, "", msg)
}

func (p *parser) add(pos Pos, key, msg string) {
	p.problems = append(p.problems, Problem{Pos: pos, Key: key, Message: msg})
}

// warn records advice that does not fail validation.
func (p *parser) warn(pos Pos, key, msg string) {
	p.warnings = append(p.warnings, Problem{Pos: pos, Key: key, Message: msg})
}

// Load reads and validates the service repository in dir. Problem files
// are relative to dir. The service is returned even when there are
// problems (as far as it could be read), but must not be run then.
func Load(dir string) (*Service, Problems) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, Problems{{Pos: Pos{File: "."}, Message: fmt.Sprintf("cannot read service repository: %v", err)}}
	}
	if !st.IsDir() {
		return nil, Problems{{Pos: Pos{File: "."}, Message: "service repository must be a directory"}}
	}
	return LoadFS(os.DirFS(dir))
}

// LoadFS is Load for a repository materialized as a file system (the
// catalog's checkout at a commit).
func LoadFS(fsys fs.FS) (*Service, Problems) {
	p := &parser{fsys: fsys, order: &expr.KeyOrder{}}
	svc := &Service{
		KeyOrder:  p.order,
		Essences:  map[string]map[string]any{},
		Scenarios: map[string]*Scenario{},
		Destinies: map[string]*Destiny{},
		Health:    map[string]*HealthCheck{},
		Rules:     map[string]*Rule{},
	}
	p.manifest(fsys, svc)
	p.essence(fsys, svc)
	p.health(fsys, svc)
	svc.Modules = p.customModules(fsys)
	for _, name := range p.unitNames(fsys, "destiny") {
		dir := "destiny/" + name
		files := p.readTree(fsys, dir)
		if d := p.destiny(name, dir, files, svc.Modules); d != nil {
			svc.Destinies[name] = d
		}
	}
	for _, name := range p.unitNames(fsys, "scenario") {
		dir := "scenario/" + name
		files := p.readTree(fsys, dir)
		if s := p.scenario(svc, name, dir, files); s != nil {
			svc.Scenarios[name] = s
		}
	}
	p.rules(fsys, svc)
	svc.Warnings = sortProblems(p.warnings)
	return svc, sortProblems(p.problems)
}

// ParseDestiny parses and validates a destiny from its bundle files (paths
// relative to the destiny directory), as a soul receives it, with the
// service's custom modules the bundle carries (nil: none). The error is a
// Problems value when the bundle is invalid.
func ParseDestiny(name string, files map[string][]byte, mods map[string]*custom.Module) (*Destiny, error) {
	p := &parser{order: &expr.KeyOrder{}}
	d := p.destiny(name, "destiny/"+name, files, mods)
	if len(p.problems) > 0 {
		return nil, sortProblems(p.problems)
	}
	d.KeyOrder = p.order
	return d, nil
}

// unitNames lists the directories under parent (scenario or destiny).
func (p *parser) unitNames(fsys fs.FS, parent string) []string {
	ents, err := fs.ReadDir(fsys, parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		p.add(Pos{File: parent}, "", fmt.Sprintf("cannot read %s/: %v", parent, err))
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if !unitNameRE.MatchString(e.Name()) {
			if !strings.HasPrefix(e.Name(), ".") {
				p.add(Pos{File: parent + "/" + e.Name()}, "", fmt.Sprintf("%s name %q must start with a letter or digit and hold only letters, digits, _ . -", parent, e.Name()))
			}
			continue
		}
		out = append(out, e.Name())
	}
	return out
}

// readTree reads every regular file under dir, keyed relative to dir.
func (p *parser) readTree(fsys fs.FS, dir string) map[string][]byte {
	files := map[string][]byte{}
	err := fs.WalkDir(fsys, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			p.add(Pos{File: name}, "", fmt.Sprintf("cannot read: %v", err))
			return nil
		}
		if d.IsDir() {
			if name != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err == nil && info.Size() > maxFileSize {
			p.skip(name, fmt.Sprintf("file is larger than %d bytes (%d bytes): split it, or move data out of the repository", maxFileSize, info.Size()))
			return nil
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			p.skip(name, fmt.Sprintf("cannot read: %v", err))
			return nil
		}
		files[strings.TrimPrefix(name, dir+"/")] = data
		return nil
	})
	if err != nil {
		p.add(Pos{File: dir}, "", fmt.Sprintf("cannot read: %v", err))
	}
	return files
}

func readOptional(fsys fs.FS, name string) ([]byte, bool, error) {
	data, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// manifest reads service.yml.
func (p *parser) manifest(fsys fs.FS, svc *Service) {
	const file = "service.yml"
	data, ok, err := readOptional(fsys, file)
	if err != nil {
		p.add(Pos{File: file}, "", fmt.Sprintf("cannot read: %v", err))
		return
	}
	if !ok {
		p.add(Pos{File: file}, "", "service.yml is missing: every service repository needs one with at least name:")
		return
	}
	svc.Manifest.Pos = Pos{File: file, Line: 1, Col: 1}
	root, ok := p.parseYAML(file, data)
	if !ok {
		return
	}
	ents, ok := p.mapping(file, root, "service.yml")
	if !ok {
		return
	}
	var schemaNode *yaml.Node
	for _, e := range ents {
		switch e.key {
		case "name":
			if s, ok := p.str(file, e.value, "name"); ok {
				if !unitNameRE.MatchString(s) {
					p.add(posOf(file, e.value), "name", fmt.Sprintf("name %q must start with a letter or digit and hold only letters, digits, _ . -", s))
				}
				svc.Manifest.Name = s
			}
		case "description":
			svc.Manifest.Description, _ = p.str(file, e.value, "description")
		case "state_schema":
			schemaNode = e.value
		default:
			p.unknownKey(e, serviceKeys, "service.yml")
		}
	}
	if svc.Manifest.Name == "" && !hasKey(ents, "name") {
		p.add(Pos{File: file, Line: 1, Col: 1}, "name", "service.yml: name: is required")
	}
	if schemaNode != nil && !isNull(schemaNode) {
		v := p.value(file, schemaNode)
		m, isMap := v.(map[string]any)
		if !isMap {
			p.add(posOf(file, schemaNode), "state_schema", fmt.Sprintf("state_schema must be a JSON Schema object, got %s", kindName(schemaNode)))
			return
		}
		if schemaCompiler == nil {
			// Fail closed: a state_schema that cannot be checked is refused.
			p.add(posOf(file, schemaNode), "state_schema", "state_schema cannot be checked by this program (built without internal/stateschema/dslhook)")
			return
		}
		validate, msg, loc, err := schemaCompiler(m)
		if err != nil {
			p.add(posOf(file, nodeAt(schemaNode, loc)), "state_schema", "state_schema is not a valid JSON Schema: "+msg)
			return
		}
		svc.Manifest.StateSchema = m
		svc.validateState = validate
		p.secretStateKeys(file, schemaNode, m)
	}
}

// secretStateKeys checks the secret: markers of state_schema's top-level
// properties (SPEC §10.2: a key declared secret: true holds a secret's
// derivative, stored encrypted and shown as ****): a boolean, and only
// there.
func (p *parser) secretStateKeys(file string, schemaNode *yaml.Node, m map[string]any) {
	props, _ := m["properties"].(map[string]any)
	for _, k := range sortedKeys(props) {
		prop, _ := props[k].(map[string]any)
		v, ok := prop["secret"]
		if !ok {
			continue
		}
		if _, isBool := v.(bool); !isBool {
			p.add(posOf(file, nodeAt(schemaNode, []string{"properties", k, "secret"})), "state_schema",
				fmt.Sprintf("state_schema: properties.%s.secret must be true or false", k))
		}
	}
	if _, ok := m["secret"]; ok {
		p.add(posOf(file, nodeAt(schemaNode, []string{"secret"})), "state_schema",
			"state_schema: secret: marks a key (properties.<key>.secret: true), not the whole state")
	}
}

func hasKey(ents []entry, k string) bool {
	for _, e := range ents {
		if e.key == k {
			return true
		}
	}
	return false
}

// unknownKey reports e as not allowed where, suggesting the closest key.
func (p *parser) unknownKey(e entry, known []string, where string) {
	p.add(e.kpos, e.key, fmt.Sprintf("unknown key %s in %s%s", e.key, where, suggest(e.key, known)))
}

// essence reads essence/*.yaml.
func (p *parser) essence(fsys fs.FS, svc *Service) {
	ents, err := fs.ReadDir(fsys, "essence")
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		p.add(Pos{File: "essence"}, "", fmt.Sprintf("cannot read essence/: %v", err))
		return
	}
	seen := map[string]string{}
	for _, e := range ents {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		file := "essence/" + e.Name()
		base := strings.TrimSuffix(e.Name(), ext)
		if other, dup := seen[base]; dup {
			p.add(Pos{File: file}, "", fmt.Sprintf("both %s and %s define essence %s: keep one", other, file, base))
			continue
		}
		seen[base] = file
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			p.add(Pos{File: file}, "", fmt.Sprintf("cannot read: %v", err))
			continue
		}
		root, ok := p.parseYAML(file, data)
		if !ok {
			svc.essenceOpen = true // its keys are unknown: no typo reports
			continue
		}
		if root == nil {
			svc.Essences[base] = map[string]any{}
			continue
		}
		v := p.value(file, root)
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			p.add(posOf(file, root), "", fmt.Sprintf("essence must be a map of parameters, got %s", kindName(root)))
			svc.essenceOpen = true
			continue
		}
		if m == nil {
			m = map[string]any{}
		}
		svc.Essences[base] = m
	}
}

// unit is the parsing context of one scenario or destiny.
type unit struct {
	kind  expr.Kind
	name  string
	dir   string
	files map[string][]byte
	env   *expr.Env
	// svc is nil for a destiny bundle parsed on a soul.
	svc *Service
	// defined are the registers of the tasks walked so far, in order.
	defined map[string]bool
	// all are every register of the unit (for state_changes and output,
	// checked after the tasks).
	all map[string]bool
	// registered maps each register name to the task that defines it.
	registered map[string]Pos
	deferred   []exprUse
	// inputUses are the expressions that read input.<name>, checked
	// against the unit's input: once it is parsed (checkInputs).
	inputUses []exprUse
	// including is the include stack, for cycle detection.
	including []string
	// types is what the static type checker knows at this point.
	types typeState
	// serialDepth counts the enclosing blocks with serial: of the task
	// being parsed (delegate: needs one).
	serialDepth int
	// mods are the service's custom modules (service.<name>).
	mods map[string]*custom.Module
}

// exprUse is one expression whose register references are checked.
type exprUse struct {
	pos  Pos
	key  string
	refs expr.Refs
}

func (u *unit) file(rel string) string {
	if strings.HasPrefix(rel, repoPrefix) {
		return strings.TrimPrefix(rel, repoPrefix)
	}
	return u.dir + "/" + rel
}

// moduleSchema returns the schema of a module: a custom module of the
// service (service.<name>) or a registered core module.
func (u *unit) moduleSchema(name string) (module.Schema, bool) {
	if strings.HasPrefix(name, custom.Prefix) {
		m, ok := u.mods[name]
		if !ok {
			return module.Schema{}, false
		}
		return m.Schema(), true
	}
	m, ok := module.Lookup(name)
	if !ok {
		return module.Schema{}, false
	}
	return m.Schema(), true
}
