package dsl

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module"
	"go.yaml.in/yaml/v3"
)

// Bounds of a health check's schedule.
const (
	// DefaultHealthEvery is every: when omitted.
	DefaultHealthEvery = time.Minute
	// MinHealthEvery is the shortest every: accepted.
	MinHealthEvery = time.Second
	// DefaultHealthTimeout is timeout: when omitted (every: when shorter).
	DefaultHealthTimeout = 10 * time.Second
)

// healthKeys are the keys of a health/<name>.yml file.
var healthKeys = []string{"name", "description", "module", "params", "every", "timeout", "on", "where", "after_runs"}

// healthProbes are the modules a health check may call besides the ones
// declared read-only: they run a program or wait for a condition, but
// change nothing by themselves (SPEC §14.1).
var healthProbes = []string{"core.exec.run", "core.wait.http", "core.wait.port", "core.wait.file"}

// HealthCheck is one health/<name>.yml (SPEC §14.1): a read-only module call
// run by the souls on their own schedule.
type HealthCheck struct {
	// Name is the file's base name ("ping" for health/ping.yml).
	Name        string
	Description string
	Module      string
	// Params are plain values whose strings may hold ${ } interpolations
	// over essence, soulprint, incarnation and state, rendered per host by
	// the Keeper.
	Params  map[string]any
	Every   time.Duration
	Timeout time.Duration
	// On restricts the check to members carrying every listed coven (nil =
	// every member); Where is bare CEL over stable facts ("" = none).
	On    *On
	Where string
	// AfterRuns also runs the check right after every run of the
	// incarnation; the run record shows the health then.
	AfterRuns bool
	Pos       Pos
}

// IsHealthModule reports whether a health check may call module name: a
// read-only module or one of the probes.
func IsHealthModule(name string) bool {
	if slices.Contains(healthProbes, name) {
		return true
	}
	m, ok := module.Lookup(name)
	return ok && m.Schema().ReadOnly
}

// HealthModules lists the modules a health check may call, sorted.
func HealthModules() []string {
	var out []string
	for _, n := range module.Names() {
		if IsHealthModule(n) {
			out = append(out, n)
		}
	}
	return out
}

// health reads health/*.yml into svc.Health.
func (p *parser) health(fsys fs.FS, svc *Service) {
	ents, err := fs.ReadDir(fsys, "health")
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		p.add(Pos{File: "health"}, "", fmt.Sprintf("cannot read health/: %v", err))
		return
	}
	for _, e := range ents {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".yml" && ext != ".yaml") {
			continue
		}
		file := "health/" + e.Name()
		name := strings.TrimSuffix(e.Name(), ext)
		if !unitNameRE.MatchString(name) {
			p.add(Pos{File: file}, "", fmt.Sprintf("health check name %q must start with a letter or digit and hold only letters, digits, _ . -", name))
			continue
		}
		if _, dup := svc.Health[name]; dup {
			p.add(Pos{File: file}, "", fmt.Sprintf("health check %s is defined twice (.yml and .yaml): keep one", name))
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() > maxFileSize {
			p.skip(file, fmt.Sprintf("file is larger than %d bytes", maxFileSize))
			continue
		}
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			p.add(Pos{File: file}, "", fmt.Sprintf("cannot read: %v", err))
			continue
		}
		if hc := p.healthCheck(svc, name, file, data); hc != nil {
			svc.Health[name] = hc
		}
	}
}

// healthCheck parses one health check file.
func (p *parser) healthCheck(svc *Service, name, file string, data []byte) *HealthCheck {
	root, ok := p.parseYAML(file, data)
	if !ok {
		return nil
	}
	ents, ok := p.mapping(file, root, "a health check")
	if !ok {
		return nil
	}
	u := newUnit(expr.KindScenario, name, "health", map[string][]byte{name: data}, svc)
	hc := &HealthCheck{Name: name, Every: DefaultHealthEvery, Timeout: DefaultHealthTimeout, Pos: Pos{File: file, Line: 1, Col: 1}}
	v := map[string]*yaml.Node{}
	kpos := map[string]Pos{}
	for _, e := range ents {
		if !slices.Contains(healthKeys, e.key) {
			p.unknownKey(e, healthKeys, "health check "+name)
			continue
		}
		v[e.key], kpos[e.key] = e.value, e.kpos
	}
	if n, ok := v["name"]; ok {
		if s, ok := p.str(file, n, "name"); ok && s != name {
			p.add(posOf(file, deref(n)), "name", fmt.Sprintf("name: %s differs from the file name %s: a check is named after its file; drop name:", s, name))
		}
	}
	if n, ok := v["description"]; ok {
		hc.Description, _ = p.str(file, n, "description")
	}
	if n, ok := v["on"]; ok {
		if hc.On = p.on(file, n); hc.On != nil && hc.On.Keeper {
			p.add(hc.On.Pos, "on", "on: keeper is not allowed in a health check: the souls run the checks; target covens or omit on:")
			hc.On = nil
		}
	}
	if n, ok := v["where"]; ok {
		hc.Where = p.predicate(u, file, n, "where", templateOpts{})
	}
	if n, ok := v["every"]; ok {
		if hc.Every = p.duration(file, n, "every", false); hc.Every > 0 && hc.Every < MinHealthEvery {
			p.add(posOf(file, deref(n)), "every", fmt.Sprintf("every: must be at least %s", MinHealthEvery))
		}
	}
	if n, ok := v["timeout"]; ok {
		hc.Timeout = p.duration(file, n, "timeout", false)
	} else if hc.Every > 0 {
		hc.Timeout = min(hc.Timeout, hc.Every)
	}
	if _, given := v["timeout"]; given && hc.Every > 0 && hc.Timeout > hc.Every {
		p.add(kpos["timeout"], "timeout", fmt.Sprintf("timeout: %s is longer than every: %s: a check must end before the next one starts", hc.Timeout, hc.Every))
	}
	if n, ok := v["after_runs"]; ok {
		hc.AfterRuns, _ = p.boolean(file, n, "after_runs")
	}
	modNode, ok := v["module"]
	if !ok {
		p.add(hc.Pos, "module", fmt.Sprintf("health check %s has no module: give it a read-only module such as core.exec.run (a Nagios plugin) or core.wait.http", name))
		return hc
	}
	if _, ok := v["params"]; ok {
		if pn := deref(v["params"]); pn != nil && pn.Kind == yaml.ScalarNode && pn.Tag == "!!null" {
			v["params"] = nil
		}
	}
	t := &Task{Pos: hc.Pos, KeyPos: kpos}
	before := len(p.problems)
	p.moduleCall(u, file, t, modNode, v["params"])
	hc.Module, hc.Params = t.Module, t.Params
	if len(p.problems) == before && t.Module != "" && !IsHealthModule(t.Module) {
		p.add(posOf(file, deref(modNode)), "module", fmt.Sprintf("%s changes hosts and cannot be a health check: use a read-only module (%s)", t.Module, strings.Join(HealthModules(), ", ")))
	}
	p.checkDeferred(u)
	p.checkInputs(u, nil)
	return hc
}
