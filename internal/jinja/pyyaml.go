package jinja

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// pyYAML writes v as PyYAML's safe dump does for Ansible's to_yaml (flow
// is true: collections of scalars only are written in flow style, indent
// 2) and to_nice_yaml (flow false, indent 4): keys sorted, sequences in a
// mapping not indented, strings plain when PyYAML would leave them plain
// and single-quoted otherwise (double-quoted when they hold a line break
// or a control character).
func pyYAML(v any, flow bool, indent, limit int) (string, error) {
	w := &boundedWriter{limit: limit}
	y := yamlWriter{w: w, flow: flow, indent: indent}
	if isScalar(v) || y.flowable(v) {
		s, err := y.flowNode(v)
		if err != nil {
			return "", err
		}
		if isScalar(v) {
			s += "\n..."
		}
		return s + "\n", w.put(s + "\n")
	}
	if err := y.block(v, 0); err != nil {
		return "", err
	}
	return w.String(), nil
}

type yamlWriter struct {
	w      *boundedWriter
	flow   bool
	indent int
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func (y yamlWriter) flowable(v any) bool {
	if !y.flow {
		switch x := v.(type) {
		case map[string]any:
			return len(x) == 0
		case []any:
			return len(x) == 0
		}
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		for _, it := range x {
			if !isScalar(it) {
				return false
			}
		}
	case []any:
		for _, it := range x {
			if !isScalar(it) {
				return false
			}
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// block writes a non-flow collection starting at column col; the caller
// has written what precedes it on the first line.
func (y yamlWriter) block(v any, col int) error {
	pad := strings.Repeat(" ", col)
	switch x := v.(type) {
	case map[string]any:
		for i, k := range sortedKeys(x) {
			prefix := pad
			if i == 0 {
				prefix = ""
			}
			if err := y.w.put(prefix + yamlScalar(k, false) + ":"); err != nil {
				return err
			}
			if err := y.child(x[k], col, false); err != nil {
				return err
			}
		}
	case []any:
		for i, it := range x {
			prefix := pad
			if i == 0 {
				prefix = ""
			}
			if err := y.w.put(prefix + "-"); err != nil {
				return err
			}
			if err := y.child(it, col, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// child writes the value of a key or sequence item of a collection at col.
func (y yamlWriter) child(v any, col int, inSeq bool) error {
	if isScalar(v) || y.flowable(v) {
		s, err := y.flowNode(v)
		if err != nil {
			return err
		}
		return y.w.put(" " + s + "\n")
	}
	if inSeq {
		// PyYAML puts the first key or item of a collection in a sequence
		// on the dash's line.
		if err := y.w.put(strings.Repeat(" ", y.indent-1)); err != nil {
			return err
		}
		return y.block(v, col+y.indent)
	}
	if _, ok := v.([]any); ok {
		if err := y.w.put("\n" + strings.Repeat(" ", col)); err != nil {
			return err
		}
		return y.block(v, col)
	}
	if err := y.w.put("\n" + strings.Repeat(" ", col+y.indent)); err != nil {
		return err
	}
	return y.block(v, col+y.indent)
}

func (y yamlWriter) flowNode(v any) (string, error) {
	switch x := v.(type) {
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range sortedKeys(x) {
			s, err := y.flowNode(x[k])
			if err != nil {
				return "", err
			}
			parts = append(parts, yamlScalar(k, true)+": "+s)
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	case []any:
		parts := make([]string, 0, len(x))
		for _, it := range x {
			s, err := y.flowNode(it)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case nil:
		return "null", nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return pyFloat(x), nil
	case string:
		return yamlScalar(x, y.flow), nil
	}
	return "", fmt.Errorf("cannot write %T as YAML", v)
}

// yamlImplicit matches strings YAML 1.1 would read as another type.
var yamlImplicit = regexp.MustCompile(`^(?:~|null|Null|NULL|y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?|0x[0-9a-fA-F_]+|0o?[0-7_]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*|=|<<|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)$`)

// yamlScalar quotes s as PyYAML would choose to (approximately).
func yamlScalar(s string, inFlow bool) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if r == '\n' || r < 0x20 && r != '\t' || r == 0x7f {
			return jsonString(s)
		}
	}
	spaceAfterFirst := len(s) == 1 || s[1] == ' '
	plain := !yamlImplicit.MatchString(s) &&
		!strings.ContainsAny(s[:1], ",[]{}#&*!|>'\"%@` \t") &&
		!(strings.ContainsAny(s[:1], "-?:") && spaceAfterFirst) &&
		!strings.HasSuffix(s, " ") && !strings.HasSuffix(s, ":") &&
		!strings.Contains(s, ": ") && !strings.Contains(s, " #") && !strings.Contains(s, "\t")
	if plain && inFlow && (strings.ContainsAny(s, ",[]{}") || strings.ContainsAny(s[:1], "?:")) {
		plain = false
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
