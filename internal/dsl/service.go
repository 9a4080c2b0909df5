package dsl

import (
	"sort"

	"github.com/soulstack/soulstack/internal/domain"
)

// Essence merges the essence of an incarnation (SPEC §4): _default, then
// each coven's file for the incarnation's covens in sorted order, then the
// incarnation's own file, then overrides. Maps merge deeply; lists and
// scalars replace. The result shares nothing with the service.
func (s *Service) Essence(covens []string, incarnation string, overrides map[string]any) map[string]any {
	out := map[string]any{}
	merge := func(m map[string]any) {
		if m != nil {
			out = deepMerge(out, m)
		}
	}
	merge(s.Essences["_default"])
	sorted := append([]string(nil), covens...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if c != "_default" && c != incarnation {
			merge(s.Essences[c])
		}
	}
	if incarnation != "" && incarnation != "_default" {
		merge(s.Essences[incarnation])
	}
	merge(overrides)
	return out
}

// deepMerge returns dst with src merged into it (src wins); values are
// copied so the result does not alias src.
func deepMerge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		sm, sIsMap := v.(map[string]any)
		dm, dIsMap := dst[k].(map[string]any)
		if sIsMap && dIsMap {
			dst[k] = deepMerge(dm, sm)
			continue
		}
		dst[k] = deepCopy(v)
	}
	return dst
}

// SchemaCompiler compiles a state_schema: the validate function it returns
// checks a state; on error msg has the problem and loc the JSON pointer
// tokens of its place in the schema. stateschema.Compile is the one in use.
type SchemaCompiler func(schema map[string]any) (validate func(state map[string]any) error, msg string, loc []string, err error)

var schemaCompiler SchemaCompiler

// RegisterSchemaCompiler enables state_schema checking (package
// stateschema/dslhook calls it in init). Programs that never load a
// service.yml — the soul — leave it unset and do not link JSON Schema.
func RegisterSchemaCompiler(c SchemaCompiler) { schemaCompiler = c }

// ValidateState checks a state (the result of state_changes applied to the
// committed state) against service.yml's state_schema; nil when there is
// no schema. The error is a *domain.Error with CodeInvalid naming the
// failing location.
func (s *Service) ValidateState(state map[string]any) error {
	if s.validateState == nil {
		return nil
	}
	if err := s.validateState(state); err != nil {
		return &domain.Error{Code: domain.CodeInvalid, Message: "state violates service.yml state_schema", Err: err}
	}
	return nil
}

// SecretStateKeys lists the state keys state_schema declares secret: true
// (SPEC §10.2): their values may be derived from secrets, are stored
// sealed and are shown as ****.
func (s *Service) SecretStateKeys() []string {
	if s == nil || s.Manifest.StateSchema == nil {
		return nil
	}
	props, _ := s.Manifest.StateSchema["properties"].(map[string]any)
	var out []string
	for _, k := range sortedKeys(props) {
		if prop, _ := props[k].(map[string]any); prop["secret"] == true {
			out = append(out, k)
		}
	}
	return out
}

// Counts are the sizes shown by soulctl scenario validate.
type Counts struct {
	Scenarios, Destinies, Tasks int
}

// Counts counts scenarios, destinies and tasks (every task that does
// something: module and apply tasks, and blocks; spliced includes count by
// their tasks).
func (s *Service) Counts() Counts {
	c := Counts{Scenarios: len(s.Scenarios), Destinies: len(s.Destinies)}
	var walk func([]*Task)
	walk = func(ts []*Task) {
		for _, t := range ts {
			c.Tasks++
			walk(t.Block)
		}
	}
	for _, sc := range s.Scenarios {
		walk(sc.Tasks)
	}
	for _, d := range s.Destinies {
		walk(d.Tasks)
	}
	return c
}
