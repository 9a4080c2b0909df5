package dsl

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/expr"
)

// VarsFile is one entry of vars_files: (SPEC §9): alternatives, the first
// that exists for a host wins (Ansible's include_vars with first_found).
// Paths are relative to the scenario's or destiny's directory and may hold
// ${ } (soulprint.self, input, essence, …), rendered per host.
type VarsFile struct {
	Alternatives []string
	Pos          Pos
	// Dir is the unit's directory in the repository (scenario/<name>,
	// destiny/<name>): a path that leaves it is looked up in the repository
	// under RepoKey.
	Dir string
	// Data holds every file of the unit an alternative can name, parsed
	// (path relative to the unit directory → values), so that resolving
	// needs no file access and a destiny bundle carries its own.
	Data map[string]map[string]any
}

// repoPrefix marks, in a unit's files, a vars file from outside the
// unit's directory (its path in the repository after the prefix): a
// destiny bundle carries it so, and no file under the unit can be named
// so (readTree skips dot directories; "@" is no path a path.Clean of a
// relative path makes).
const repoPrefix = "@repo/"

// RepoKey is the key under which the vars file rel (a clean path relative
// to the unit directory dir) is found in the unit's files and in Data:
// rel itself inside dir, else the repository path after repoPrefix. ok is
// false when rel leaves the repository.
func RepoKey(dir, rel string) (string, bool) {
	rel = path.Clean(strings.TrimPrefix(rel, "./"))
	if path.IsAbs(rel) {
		return "", false
	}
	if rel != ".." && !strings.HasPrefix(rel, "../") {
		return rel, true
	}
	full := path.Join(dir, rel)
	if full == ".." || strings.HasPrefix(full, "../") {
		return "", false
	}
	return repoPrefix + full, true
}

// interpRE finds the ${ } of a path, to turn it into a glob.
var interpRE = regexp.MustCompile(`\$\{[^}]*\}`)

// varsFiles parses a vars_files: list and sets the static types of the
// vars its files define: a key every candidate file of an entry defines
// with one type gets that type, any other key is dyn.
func (p *parser) varsFiles(u *unit, file string, n *yaml.Node, key string) []VarsFile {
	items, ok := p.sequence(file, n, key)
	if !ok {
		return nil
	}
	var out []VarsFile
	for i, it := range items {
		it = deref(it)
		ekey := fmt.Sprintf("%s[%d]", key, i)
		vf := VarsFile{Pos: posOf(file, it), Dir: u.dir, Data: map[string]map[string]any{}}
		var alts []*yaml.Node
		switch {
		case it != nil && it.Kind == yaml.ScalarNode && it.Tag == "!!str":
			alts = []*yaml.Node{it}
		case it != nil && it.Kind == yaml.SequenceNode && len(it.Content) > 0:
			alts = it.Content
		default:
			p.add(vf.Pos, ekey, fmt.Sprintf("%s must be a path or a non-empty list of alternative paths (the first that exists wins), got %s", ekey, kindName(it)))
			continue
		}
		var cands []string
		for _, a := range alts {
			a = deref(a)
			s, ok := p.str(file, a, ekey)
			if !ok {
				continue
			}
			apos := posOf(file, a)
			if t := p.templates(u, file, a, ekey, templateOpts{}); t != nil && t != cel.StringType && t != cel.DynType {
				p.add(apos, ekey, fmt.Sprintf("%s: a path must be a string, but %s is %s", ekey, strings.TrimSpace(s), expr.TypeName(t)))
			}
			glob := interpRE.ReplaceAllString(s, "*")
			key, inRepo := RepoKey(u.dir, glob)
			if clean := path.Clean(glob); path.IsAbs(glob) || !inRepo || clean != strings.TrimPrefix(glob, "./") && !strings.HasPrefix(key, repoPrefix) {
				p.add(apos, ekey, fmt.Sprintf("%s: %q must be a clean path relative to %s that stays in the repository (no leading /)", ekey, s, u.dir))
				continue
			}
			if strings.HasPrefix(key, repoPrefix) && p.fsys != nil {
				p.readRepoVars(u, key)
			}
			vf.Alternatives = append(vf.Alternatives, s)
			matched := false
			for name := range u.files {
				if ok, _ := path.Match(key, name); ok {
					matched = true
					cands = append(cands, name)
				}
			}
			if !matched && glob == s {
				p.add(apos, ekey, fmt.Sprintf("%s: %s does not exist in %s%s", ekey, s, u.dir, suggest(s, sortedKeys(u.files))))
			}
		}
		if len(vf.Alternatives) != len(alts) {
			continue
		}
		if len(cands) == 0 {
			p.add(vf.Pos, ekey, fmt.Sprintf("%s: no file in %s matches any of %s: no host could find its vars", ekey, u.dir, strings.Join(vf.Alternatives, ", ")))
			continue
		}
		sort.Strings(cands)
		cands = compactStrings(cands)
		for _, c := range cands {
			if m, ok := p.varsData(u, c); ok {
				vf.Data[c] = m
			}
		}
		setVarsTypes(u, vf.Data)
		// Expressions in the files are checked once the files' own keys
		// have their types, so that one var may read another.
		for _, c := range cands {
			if _, ok := vf.Data[c]; ok {
				p.varsExprs(u, c)
			}
		}
		out = append(out, vf)
	}
	return out
}

// varsData parses one vars file: a map of identifiers to plain data.
func (p *parser) varsData(u *unit, name string) (map[string]any, bool) {
	file := u.file(name)
	root, ok := p.parseYAML(file, u.files[name])
	if !ok {
		return nil, false
	}
	if root == nil {
		return map[string]any{}, true
	}
	ents, ok := p.mapping(file, root, "a vars file")
	if !ok {
		return nil, false
	}
	out := make(map[string]any, len(ents))
	good := true
	for _, e := range ents {
		if !identRE.MatchString(e.key) {
			p.add(e.kpos, e.key, fmt.Sprintf("vars name %q must be an identifier (letters, digits, _), so that vars.%s can be read", e.key, e.key))
			good = false
		}
		out[e.key] = p.value(file, e.value)
	}
	return out, good
}

// readRepoVars adds the repository files matching key (repoPrefix and a
// path, maybe a glob) to the unit's files, so that they are validated like
// its own and a destiny bundle carries them.
func (p *parser) readRepoVars(u *unit, key string) {
	names, err := fs.Glob(p.fsys, strings.TrimPrefix(key, repoPrefix))
	if err != nil {
		return
	}
	for _, name := range names {
		k := repoPrefix + name
		if _, ok := u.files[k]; ok {
			continue
		}
		if fi, err := fs.Stat(p.fsys, name); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxFileSize {
			continue
		}
		if b, err := fs.ReadFile(p.fsys, name); err == nil {
			u.files[k] = b
		}
	}
}

// varsExprs type-checks the ${ } of the vars file name; a var whose value
// holds one is dyn (its type is the rendered value's).
func (p *parser) varsExprs(u *unit, name string) {
	file := u.file(name)
	root, ok := p.parseYAML(file, u.files[name])
	if !ok || root == nil {
		return
	}
	ents, ok := p.mapping(file, root, "a vars file")
	if !ok {
		return
	}
	var templated []entry
	for _, e := range ents {
		has := false
		p.walkStringNodes(file, e.value, e.key, func(sn *yaml.Node, _ string) {
			has = has || expr.HasInterpolation(sn.Value)
		})
		if has {
			u.types.vars[e.key] = cel.DynType
			templated = append(templated, e)
		}
	}
	for _, e := range templated {
		p.templates(u, file, e.value, e.key, templateOpts{})
	}
}

// setVarsTypes records the static types of the vars the candidate files
// define.
func setVarsTypes(u *unit, data map[string]map[string]any) {
	seen := map[string]*cel.Type{}
	mixed := map[string]bool{}
	for _, m := range data {
		for k, v := range m {
			t := expr.TypeOfValue(v)
			if prev, ok := seen[k]; ok && prev.String() != t.String() {
				mixed[k] = true
			}
			seen[k] = t
		}
	}
	for k, t := range seen {
		inAll := true
		for _, m := range data {
			if _, ok := m[k]; !ok {
				inAll = false
			}
		}
		if inAll && !mixed[k] {
			u.types.vars[k] = t
		} else {
			// Some hosts get it, or with another type: known, untyped.
			u.types.vars[k] = cel.DynType
		}
	}
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
