// Package schemaobj builds the closed objects of the editor schemas
// (internal/dsl's and internal/checker's), checked against the parsers'
// key lists.
package schemaobj

import (
	"fmt"
	"slices"
)

// Closed is a JSON Schema object whose properties are exactly keys, each
// described by props. It panics when they disagree: the parser's key list
// is the source of truth and every key needs its schema. kind names the
// schema in the panic ("editor schema", "procedure schema"), where the
// object.
func Closed(kind, where string, keys []string, props map[string]any) map[string]any {
	for _, k := range keys {
		if _, ok := props[k]; !ok {
			panic(fmt.Sprintf("%s of %s: key %s accepted by the parser has no schema", kind, where, k))
		}
	}
	for k := range props {
		if !slices.Contains(keys, k) {
			panic(fmt.Sprintf("%s of %s: key %s is not accepted by the parser", kind, where, k))
		}
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}
