// Package stateschema compiles a service's state_schema (JSON Schema) and
// validates incarnation states against it. It is kept out of package dsl so
// the soul, which parses destinies but never a service.yml, does not link
// the JSON Schema library (about 3 MiB of the idle soul's memory); keeper
// side programs enable it in dsl by importing stateschema/dslhook.
package stateschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile compiles a state_schema document. On error it returns the leaf
// messages of the problem and the location (JSON pointer tokens) of the
// first one inside the schema, for a file:line.
func Compile(m map[string]any) (validate func(map[string]any) error, msg string, loc []string, err error) {
	doc, err := jsonValue(m)
	if err != nil {
		return nil, err.Error(), nil, err
	}
	c := jsonschema.NewCompiler()
	const url = "soulstack:///service.yml/state_schema.json"
	if err := c.AddResource(url, doc); err != nil {
		msg, loc := leaves(err)
		return nil, msg, loc, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		msg, loc := leaves(err)
		return nil, msg, loc, err
	}
	return func(state map[string]any) error {
		doc, err := jsonValue(state)
		if err != nil {
			return errors.New("state is not JSON-representable: " + err.Error())
		}
		if err := sch.Validate(doc); err != nil {
			msg, _ := leaves(err)
			return errors.New(msg)
		}
		return nil
	}, "", nil, nil
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

// leaves flattens a jsonschema error into its leaf messages ("at
// '/properties/version/type': value must be one of …") and the instance
// location of the first leaf.
func leaves(err error) (string, []string) {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		err = sve.Err
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error(), nil
	}
	var all []string
	var first []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if first == nil {
				first = e.InstanceLocation
			}
			all = append(all, e.Error())
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(all, "; "), first
}
