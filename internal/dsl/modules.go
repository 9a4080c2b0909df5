package dsl

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/module/custom"
)

// maxProgramSize bounds a custom module's program (it travels with every
// call).
const maxProgramSize = 1 << 20

// customModules reads modules/<name>/module.yml and modules/<name>/run:
// the service's typed custom modules (SPEC §9), keyed service.<name>.
func (p *parser) customModules(fsys fs.FS) map[string]*custom.Module {
	ents, err := fs.ReadDir(fsys, "modules")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		p.add(Pos{File: "modules"}, "", fmt.Sprintf("cannot read modules/: %v", err))
		return nil
	}
	mods := map[string]*custom.Module{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := "modules/" + e.Name()
		if !e.IsDir() {
			p.add(Pos{File: dir}, "", "modules/ holds one directory per module (modules/<name>/module.yml and modules/<name>/run)")
			continue
		}
		if !custom.NameRE.MatchString(e.Name()) {
			p.add(Pos{File: dir}, "", fmt.Sprintf("module directory name %q must start with a lower-case letter and hold only a-z, 0-9, _ and -", e.Name()))
			continue
		}
		if m := p.customModule(fsys, e.Name()); m != nil {
			mods[m.Name()] = m
		} else {
			if p.brokenMods == nil {
				p.brokenMods = map[string]bool{}
			}
			p.brokenMods[custom.Prefix+e.Name()] = true
		}
	}
	return mods
}

// customModule reads one module directory; nil when it has problems
// (reported).
func (p *parser) customModule(fsys fs.FS, name string) *custom.Module {
	dir := "modules/" + name
	specFile, runFile := dir+"/module.yml", dir+"/run"
	spec, okSpec := p.moduleFile(fsys, specFile, "module.yml is missing: declare the module (summary:, params:, output:, check_mode:)")
	prog, okRun := p.moduleFile(fsys, runFile, "the module's program is missing: add an executable "+runFile+" (any language, with a #! line)")
	if okRun {
		if st, err := fs.Stat(fsys, runFile); err == nil && st.Mode().Perm()&0o111 == 0 {
			p.add(Pos{File: runFile}, "", fmt.Sprintf("%s is not executable: chmod +x it (git update-index --chmod=+x %s) and commit", runFile, runFile))
			okRun = false
		}
		if len(prog) > maxProgramSize {
			p.add(Pos{File: runFile}, "", fmt.Sprintf("%s is larger than %d bytes: a module's program travels with every call", runFile, maxProgramSize))
			okRun = false
		}
	}
	if !okSpec {
		return nil
	}
	m, problems := custom.New(name, spec, prog)
	for _, pr := range problems {
		line, col := pr.Line, pr.Col
		if line == 0 {
			line, col = 1, 1
		}
		p.add(Pos{File: specFile, Line: line, Col: col}, pr.Key, pr.Message)
	}
	if len(problems) > 0 || !okRun {
		return nil
	}
	return m
}

// moduleFile reads one regular file of a module directory.
func (p *parser) moduleFile(fsys fs.FS, name, missing string) ([]byte, bool) {
	st, err := fs.Stat(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		p.add(Pos{File: name}, "", missing)
		return nil, false
	}
	if err == nil && !st.Mode().IsRegular() {
		p.add(Pos{File: name}, "", "must be a regular file")
		return nil, false
	}
	if err == nil && st.Size() > maxFileSize {
		p.add(Pos{File: name}, "", fmt.Sprintf("file is larger than %d bytes", maxFileSize))
		return nil, false
	}
	var data []byte
	if err == nil {
		data, err = fs.ReadFile(fsys, name)
	}
	if err != nil {
		p.add(Pos{File: name}, "", fmt.Sprintf("cannot read: %v", err))
		return nil, false
	}
	return data, true
}

// unknownModule says that name is no module, suggesting the closest one.
func (u *unit) unknownModule(name string) string {
	names := module.Names()
	for n := range u.mods {
		names = append(names, n)
	}
	sort.Strings(names)
	msg := fmt.Sprintf("unknown module %s%s", name, suggest(name, names))
	if dir, ok := strings.CutPrefix(name, custom.Prefix); ok && !strings.Contains(msg, "did you mean") {
		msg += fmt.Sprintf(" (a custom module lives in modules/%s/module.yml and modules/%s/run of the service repository)", dir, dir)
	}
	return msg
}

// UsedModules returns the custom modules the tasks call (blocks included),
// by name: what a destiny bundle ships.
func UsedModules(tasks []*Task, mods map[string]*custom.Module) map[string]*custom.Module {
	var out map[string]*custom.Module
	var walk func([]*Task)
	walk = func(ts []*Task) {
		for _, t := range ts {
			if m, ok := mods[t.Module]; ok {
				if out == nil {
					out = map[string]*custom.Module{}
				}
				out[t.Module] = m
			}
			walk(t.Block)
		}
	}
	walk(tasks)
	return out
}

// LoadModules reads the custom modules of the repository in fsys
// (modules/<name>/) alone, as `soul apply --local` does for a destiny of a
// service repository.
func LoadModules(fsys fs.FS) (map[string]*custom.Module, Problems) {
	p := &parser{}
	mods := p.customModules(fsys)
	return mods, sortProblems(p.problems)
}
