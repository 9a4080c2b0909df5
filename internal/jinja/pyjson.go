package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// pyJSON writes v as Python's json.dumps does (ensure_ascii, keys
// sorted: Go maps have no insertion order), with indent < 0 for the
// compact form with ", " and ": " separators (to_json) and indent >= 0
// for the pretty form with "," and ": " (to_nice_json). limit bounds the
// output (0: none).
func pyJSON(v any, indent, limit int) (string, error) {
	w := &boundedWriter{limit: limit}
	if err := writeJSON(w, v, indent, 0); err != nil {
		return "", err
	}
	return w.String(), nil
}

type boundedWriter struct {
	strings.Builder
	limit int
}

var errOverLimit = fmt.Errorf("the result is over the size limit of a template")

func (w *boundedWriter) put(s string) error {
	if w.limit > 0 && w.Len()+len(s) > w.limit {
		return errOverLimit
	}
	w.WriteString(s)
	return nil
}

func writeJSON(w *boundedWriter, v any, indent, depth int) error {
	switch x := v.(type) {
	case nil:
		return w.put("null")
	case bool:
		if x {
			return w.put("true")
		}
		return w.put("false")
	case string:
		return w.put(jsonString(x))
	case int:
		return w.put(strconv.Itoa(x))
	case int64:
		return w.put(strconv.FormatInt(x, 10))
	case float64:
		return w.put(pyFloat(x))
	case map[string]any:
		if len(x) == 0 {
			return w.put("{}")
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if err := w.put("{"); err != nil {
			return err
		}
		for i, k := range keys {
			if err := sep(w, i, indent, depth+1); err != nil {
				return err
			}
			if err := w.put(jsonString(k) + ": "); err != nil {
				return err
			}
			if err := writeJSON(w, x[k], indent, depth+1); err != nil {
				return err
			}
		}
		if err := closing(w, indent, depth); err != nil {
			return err
		}
		return w.put("}")
	case []any:
		if len(x) == 0 {
			return w.put("[]")
		}
		if err := w.put("["); err != nil {
			return err
		}
		for i, it := range x {
			if err := sep(w, i, indent, depth+1); err != nil {
				return err
			}
			if err := writeJSON(w, it, indent, depth+1); err != nil {
				return err
			}
		}
		if err := closing(w, indent, depth); err != nil {
			return err
		}
		return w.put("]")
	}
	return fmt.Errorf("cannot encode %T as JSON", v)
}

func sep(w *boundedWriter, i, indent, depth int) error {
	if indent < 0 {
		if i > 0 {
			return w.put(", ")
		}
		return nil
	}
	s := "\n" + strings.Repeat(" ", indent*depth)
	if i > 0 {
		s = "," + s
	}
	return w.put(s)
}

func closing(w *boundedWriter, indent, depth int) error {
	if indent < 0 {
		return nil
	}
	return w.put("\n" + strings.Repeat(" ", indent*depth))
}

// jsonString quotes s as json.dumps with ensure_ascii does.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0xffff):
				fmt.Fprintf(&b, `\u%04x`, r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// pyFloat formats f as Python's repr does (1.0, 0.1, 1e+16).
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-4 || a >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		exp = strings.TrimLeft(exp[1:], "0")
		if len(exp) < 2 {
			exp = fmt.Sprintf("%02s", exp)
		}
		return mant + "e" + string(sign) + exp
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
