package dsl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

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

// ValidateState checks a state (the result of state_changes applied to the
// committed state) against service.yml's state_schema; nil when there is
// no schema. The error is a *domain.Error with CodeInvalid naming the
// failing location.
func (s *Service) ValidateState(state map[string]any) error {
	if s.stateSchema == nil {
		return nil
	}
	doc, err := jsonValue(state)
	if err != nil {
		return fmt.Errorf("state is not JSON-representable: %w", err)
	}
	if err := s.stateSchema.Validate(doc); err != nil {
		msg, _ := schemaErrorLeaves(err)
		return &domain.Error{Code: domain.CodeInvalid, Message: "state violates service.yml state_schema", Err: errors.New(msg)}
	}
	return nil
}

// jsonValue converts v to the representation jsonschema expects (json.Number
// numbers) by a JSON round trip.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// compileSchema compiles a state_schema document.
func compileSchema(m map[string]any) (*jsonschema.Schema, error) {
	doc, err := jsonValue(m)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	const url = "soulstack:///service.yml/state_schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
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

// schemaErrorLeaves flattens a jsonschema error into its leaf messages
// ("at '/properties/version/type': value must be one of …") and the
// instance location of the first leaf.
func schemaErrorLeaves(err error) (string, []string) {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		err = sve.Err
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error(), nil
	}
	var leaves []string
	var first []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if first == nil {
				first = e.InstanceLocation
			}
			leaves = append(leaves, e.Error())
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(leaves, "; "), first
}
