// Package scenariotest runs scenario tests (SPEC §8.7): YAML files under
// scenario/<name>/tests/ that declare simulated hosts, an incarnation,
// input, module stubs and expectations, run offline with the real run
// engine, a real (temporary SQLite) store and the simulated soul transport
// of package dispatch. README.md documents the file format.
package scenariotest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/module/custom"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/textutil"
)

// Test is one parsed test file.
type Test struct {
	// Name is the file name without extension; File the path relative to
	// the repository.
	Name, File  string
	Scenario    string
	Description string
	Hosts       []Host
	Incarnation Incarnation
	Input       map[string]any
	Essence     map[string]any
	Check       bool
	Stubs       []dispatch.Stub
	Expect      Expect
}

// Host is one simulated host.
type Host struct {
	SID          string         `yaml:"sid"`
	Covens       []string       `yaml:"covens"`
	Facts        map[string]any `yaml:"facts"`
	Disconnected bool           `yaml:"disconnected"`
}

// Incarnation is the incarnation the scenario runs on.
type Incarnation struct {
	Name    string         `yaml:"name"`
	Covens  []string       `yaml:"covens"`
	Members []string       `yaml:"members"`
	State   map[string]any `yaml:"state"`
	// Triggers are pending onchanges triggers left by an earlier failed
	// run.
	Triggers []Trigger `yaml:"triggers"`
}

// Trigger is a pending onchanges trigger: handler task (name or path) owed
// to a host.
type Trigger struct {
	Task string `yaml:"task"`
	SID  string `yaml:"sid"`
}

// Expect is what the run must have done. Omitted fields are not checked.
type Expect struct {
	Outcome  string         `yaml:"outcome"`
	Error    string         `yaml:"error"`
	Status   string         `yaml:"status"`
	State    map[string]any `yaml:"state"`
	HasState bool           `yaml:"-"`
	Members  []string       `yaml:"members"`
	Tasks    []TaskExpect   `yaml:"tasks"`
	NotRun   []string       `yaml:"not_run"`
	Triggers *[]Trigger     `yaml:"triggers"`
}

// TaskExpect is what one task did. Host lists compare as sets; nil means
// not checked, [] means none.
type TaskExpect struct {
	Task        string      `yaml:"task"`
	Ran         *[]string   `yaml:"ran"`
	Waves       *[][]string `yaml:"waves"`
	Skipped     *[]string   `yaml:"skipped"`
	Changed     *[]string   `yaml:"changed"`
	Failed      *[]string   `yaml:"failed"`
	Unreachable *[]string   `yaml:"unreachable"`
	// Unknown are the hosts where a command would run in check mode.
	Unknown *[]string `yaml:"unknown"`
}

// fileSpec is the YAML shape of a test file.
type fileSpec struct {
	Description string         `yaml:"description"`
	Hosts       []Host         `yaml:"hosts"`
	Incarnation Incarnation    `yaml:"incarnation"`
	Input       map[string]any `yaml:"input"`
	Essence     map[string]any `yaml:"essence"`
	Check       bool           `yaml:"check"`
	Stubs       []stubSpec     `yaml:"stubs"`
	Expect      *Expect        `yaml:"expect"`
}

type stubSpec struct {
	Module      string       `yaml:"module"`
	Task        string       `yaml:"task"`
	Hosts       []string     `yaml:"hosts"`
	Result      *resultSpec  `yaml:"result"`
	Results     []resultSpec `yaml:"results"`
	Unreachable bool         `yaml:"unreachable"`
	Timeout     bool         `yaml:"timeout"`
}

type resultSpec struct {
	Changed bool           `yaml:"changed"`
	Failed  bool           `yaml:"failed"`
	Skipped bool           `yaml:"skipped"`
	RC      int            `yaml:"rc"`
	Stdout  string         `yaml:"stdout"`
	Stderr  string         `yaml:"stderr"`
	Msg     string         `yaml:"msg"`
	Diff    string         `yaml:"diff"`
	Data    map[string]any `yaml:"data"`
	Output  map[string]any `yaml:"output"`
}

func (r resultSpec) result() domain.Result {
	return domain.Result{
		Changed: r.Changed, Failed: r.Failed, Skipped: r.Skipped, RC: r.RC,
		Stdout: r.Stdout, Stderr: r.Stderr, Msg: r.Msg, Diff: r.Diff, Data: r.Data, Output: r.Output,
	}
}

// Problem is an invalid test file, with its position.
type Problem struct {
	File    string
	Line    int
	Message string
}

func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// Problems are every problem found in a repository's tests.
type Problems []Problem

func (ps Problems) Error() string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "\n")
}

// typeNames turn yaml.v3's Go type names into what the file calls them.
var typeNames = strings.NewReplacer(
	"scenariotest.fileSpec", "the test file",
	"scenariotest.Host", "hosts[]",
	"scenariotest.Incarnation", "incarnation",
	"scenariotest.Trigger", "a trigger",
	"scenariotest.Expect", "expect",
	"scenariotest.TaskExpect", "expect.tasks[]",
	"scenariotest.stubSpec", "stubs[]",
	"scenariotest.resultSpec", "a stub result",
)

var yamlLineRE = regexp.MustCompile(`^\s*line (\d+): (.*)$`)

// specTypes are the structs a test file decodes into, by the names yaml.v3
// gives them in its errors: their keys are the suggestions for a typo.
var specTypes = map[string]reflect.Type{
	"scenariotest.fileSpec":    reflect.TypeFor[fileSpec](),
	"scenariotest.Host":        reflect.TypeFor[Host](),
	"scenariotest.Incarnation": reflect.TypeFor[Incarnation](),
	"scenariotest.Trigger":     reflect.TypeFor[Trigger](),
	"scenariotest.Expect":      reflect.TypeFor[Expect](),
	"scenariotest.TaskExpect":  reflect.TypeFor[TaskExpect](),
	"scenariotest.stubSpec":    reflect.TypeFor[stubSpec](),
	"scenariotest.resultSpec":  reflect.TypeFor[resultSpec](),
}

var unknownFieldRE = regexp.MustCompile(`field (\S+) not found in type (\S+)$`)

// suggestKey is " (did you mean …?)" for an unknown-key error of yaml.v3,
// or "".
func suggestKey(msg string) string {
	m := unknownFieldRE.FindStringSubmatch(msg)
	if m == nil || specTypes[m[2]] == nil {
		return ""
	}
	t := specTypes[m[2]]
	var keys []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return textutil.Suggest(m[1], keys)
}

var validOutcomes = []string{store.RunSucceeded, store.RunFailed, store.RunCancelled}

// Parse reads one test file of scenario sc of svc. file names it in
// problems.
func Parse(file, name string, data []byte, svc *dsl.Service, sc *dsl.Scenario) (*Test, error) {
	var spec fileSpec
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var keyProblems Problems
	if err := dec.Decode(&spec); err != nil {
		// Unknown keys and wrong types leave the rest decoded: report them
		// with every other problem of the file, not alone.
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, yamlProblems(file, err)
		}
		keyProblems = yamlProblems(file, err).(Problems)
		// A duplicate key stops the decoding of its whole mapping, so
		// what is missing from it is not missing from the file: report the
		// duplicate alone rather than "hosts: is required" and the like.
		for _, msg := range te.Errors {
			if strings.Contains(msg, "already defined") {
				return nil, keyProblems
			}
		}
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	v := &validator{file: file, root: &root, problems: keyProblems}
	if svc != nil {
		v.custom = svc.Modules
	}
	t := &Test{
		Name: name, File: file, Scenario: sc.Name, Description: spec.Description,
		Hosts: spec.Hosts, Incarnation: spec.Incarnation, Input: spec.Input, Essence: spec.Essence, Check: spec.Check,
	}
	if spec.Expect == nil {
		v.add(nil, "expect: is required: say at least the outcome (succeeded, failed or cancelled)")
	} else {
		t.Expect = *spec.Expect
		t.Expect.HasState = v.has("expect", "state")
	}
	v.hosts(t)
	v.incarnation(t, sc)
	for i, s := range spec.Stubs {
		t.Stubs = append(t.Stubs, v.stub(t, i, s))
	}
	v.expect(t, sc)
	if len(v.problems) > 0 {
		sort.SliceStable(v.problems, func(i, j int) bool { return v.problems[i].Line < v.problems[j].Line })
		return nil, v.problems
	}
	return t, nil
}

func yamlProblems(file string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var ps Problems
		for _, e := range te.Errors {
			msg := typeNames.Replace(e) + suggestKey(e)
			line := 0
			if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
				fmt.Sscan(m[1], &line)
				msg = m[2]
			}
			msg = strings.Replace(msg, "not found in type", "is not a key of", 1)
			ps = append(ps, Problem{File: file, Line: line, Message: msg})
		}
		return ps
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &line)
		msg = m[2]
	}
	if err.Error() == "EOF" {
		msg = "the file is empty: a test needs at least hosts: and expect:"
	}
	return Problems{{File: file, Line: line, Message: msg}}
}

// validator checks the meaning of a decoded file, locating problems in
// its YAML tree.
type validator struct {
	file     string
	root     *yaml.Node
	problems Problems
	// custom are the service's custom modules (stubs may answer them).
	custom map[string]*custom.Module
}

func (v *validator) add(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	v.problems = append(v.problems, Problem{File: v.file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// node finds the node at a path of map keys and list indexes (ints); the
// deepest node found when the path does not exist all the way.
func (v *validator) node(path ...any) *yaml.Node {
	n := v.root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, p := range path {
		next := child(n, p)
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

func (v *validator) has(path ...any) bool {
	n := v.root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, p := range path {
		if n = child(n, p); n == nil {
			return false
		}
	}
	return true
}

func child(n *yaml.Node, p any) *yaml.Node {
	if n == nil {
		return nil
	}
	switch k := p.(type) {
	case string:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				return n.Content[i+1]
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && k < len(n.Content) {
			return n.Content[k]
		}
	}
	return nil
}

func (v *validator) hosts(t *Test) {
	if len(t.Hosts) == 0 {
		v.add(v.node("hosts"), "hosts: is required: list the simulated hosts with their sid:")
	}
	seen := map[string]bool{}
	for i, h := range t.Hosts {
		switch {
		case h.SID == "":
			v.add(v.node("hosts", i), "hosts[%d]: sid: is required", i)
		case h.SID == dispatch.KeeperSID:
			v.add(v.node("hosts", i, "sid"), "sid %s is reserved for on: keeper tasks", h.SID)
		case seen[h.SID]:
			v.add(v.node("hosts", i, "sid"), "host %s is declared twice", h.SID)
		}
		seen[h.SID] = true
	}
}

func (v *validator) hostList(path []any, sids []string, allowKeeper bool) {
	for i, s := range sids {
		if allowKeeper && s == dispatch.KeeperSID {
			continue
		}
		if !slices.Contains(v.hostSIDs(), s) {
			v.add(v.node(append(path, i)...), "%s is not a host of this test (hosts: %s)", s, strings.Join(v.hostSIDs(), ", "))
		}
	}
}

func (v *validator) hostSIDs() []string {
	var out []string
	hosts := v.node("hosts")
	if hosts == nil || hosts.Kind != yaml.SequenceNode {
		return nil
	}
	for _, h := range hosts.Content {
		if s := child(h, "sid"); s != nil {
			out = append(out, s.Value)
		}
	}
	return out
}

func (v *validator) incarnation(t *Test, sc *dsl.Scenario) {
	inc := &t.Incarnation
	if inc.Name == "" {
		inc.Name = "test"
	}
	if sc.Name == "create" && inc.Members != nil {
		v.add(v.node("incarnation", "members"), "the create scenario computes the members from incarnation.covens: drop members: (check them with expect.members)")
	}
	if sc.Name == "create" && len(inc.Covens) == 0 {
		v.add(v.node("incarnation"), "the create scenario needs incarnation.covens: the members are the hosts carrying all of them")
	}
	v.hostList([]any{"incarnation", "members"}, inc.Members, false)
	for i, tr := range inc.Triggers {
		v.trigger([]any{"incarnation", "triggers", i}, tr, sc)
	}
}

func (v *validator) trigger(path []any, tr Trigger, sc *dsl.Scenario) {
	if tr.Task == "" || tr.SID == "" {
		v.add(v.node(path...), "a trigger needs task: (the handler's name or path) and sid:")
		return
	}
	if findTask(sc, tr.Task) == nil {
		v.add(v.node(append(path, "task")...), "scenario %s has no task %q", sc.Name, tr.Task)
	}
	if !slices.Contains(v.hostSIDs(), tr.SID) {
		v.add(v.node(append(path, "sid")...), "%s is not a host of this test", tr.SID)
	}
}

func (v *validator) stub(t *Test, i int, s stubSpec) dispatch.Stub {
	path := []any{"stubs", i}
	n := 0
	for _, set := range []bool{s.Result != nil, s.Results != nil, s.Unreachable, s.Timeout} {
		if set {
			n++
		}
	}
	if n > 1 {
		v.add(v.node(path...), "stubs[%d]: give one of result:, results:, unreachable: true, timeout: true", i)
	}
	if _, isCustom := v.custom[s.Module]; s.Module != "" && !knownModule(s.Module) && !isCustom {
		v.add(v.node(append(path, "module")...), "unknown module %s", s.Module)
	}
	v.hostList(append(path, "hosts"), s.Hosts, true)
	st := dispatch.Stub{Module: s.Module, Task: s.Task, Hosts: s.Hosts, Unreachable: s.Unreachable, Timeout: s.Timeout}
	if s.Result != nil {
		st.Results = []domain.Result{s.Result.result()}
	}
	for _, r := range s.Results {
		st.Results = append(st.Results, r.result())
	}
	return st
}

func (v *validator) expect(t *Test, sc *dsl.Scenario) {
	e := &t.Expect
	if e.Outcome == "" && v.has("expect") {
		v.add(v.node("expect"), "expect.outcome: is required (succeeded, failed or cancelled)")
	} else if e.Outcome != "" && !slices.Contains(validOutcomes, e.Outcome) {
		v.add(v.node("expect", "outcome"), "outcome %q: use succeeded, failed or cancelled", e.Outcome)
	}
	if e.Status != "" && e.Status != store.IncarnationReady && e.Status != store.IncarnationErrorLocked {
		v.add(v.node("expect", "status"), "status %q: use ready or error_locked", e.Status)
	}
	v.hostList([]any{"expect", "members"}, e.Members, false)
	for i, te := range e.Tasks {
		path := []any{"expect", "tasks", i}
		if te.Task == "" {
			v.add(v.node(path...), "expect.tasks[%d]: task: is required (the task's name or path)", i)
		} else if findTask(sc, te.Task) == nil {
			v.add(v.node(append(path, "task")...), "scenario %s has no task %q", sc.Name, te.Task)
		}
		for _, l := range []struct {
			key  string
			list *[]string
		}{{"ran", te.Ran}, {"skipped", te.Skipped}, {"changed", te.Changed}, {"failed", te.Failed}, {"unreachable", te.Unreachable}, {"unknown", te.Unknown}} {
			if l.list != nil {
				v.hostList(append(slices.Clone(path), l.key), *l.list, true)
			}
		}
		if te.Waves != nil {
			for j, w := range *te.Waves {
				v.hostList(append(slices.Clone(path), "waves", j), w, true)
			}
		}
	}
	for i, name := range e.NotRun {
		if findTask(sc, name) == nil {
			v.add(v.node("expect", "not_run", i), "scenario %s has no task %q", sc.Name, name)
		}
	}
	if e.Triggers != nil {
		for i, tr := range *e.Triggers {
			v.trigger([]any{"expect", "triggers", i}, tr, sc)
		}
	}
}

// findTask finds a task of sc by name or path.
func findTask(sc *dsl.Scenario, ref string) *dsl.Task {
	var found *dsl.Task
	var walk func([]*dsl.Task)
	walk = func(ts []*dsl.Task) {
		for _, t := range ts {
			if found != nil {
				return
			}
			if t.Name == ref || t.Path == ref {
				found = t
				return
			}
			walk(t.Block)
		}
	}
	walk(sc.Tasks)
	return found
}
