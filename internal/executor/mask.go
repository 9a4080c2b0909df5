package executor

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
)

// MaskText is what secret values are replaced with.
const MaskText = "****"

// Mask returns r with every occurrence of a secret value replaced by ****
// in its text fields, data, output and nested results. Empty secrets are
// ignored; longer secrets are replaced first so a secret containing another
// is masked whole. A secret is also found in the forms it takes in output
// (see usable): line by line, as a diff or a line-numbering tool shows a
// multi-line secret such as a private key, and JSON-escaped.
func Mask(r domain.Result, secrets []string) domain.Result {
	s := usable(secrets)
	if len(s) == 0 {
		return r
	}
	return maskResult(r, s)
}

// minSecretLine is the shortest line of a multi-line secret masked on its
// own: shorter ones (blank lines, a lone brace) are too common to be
// telling, and masking them would shred unrelated output.
const minSecretLine = 4

// usable returns the non-empty secrets with the forms they take in output,
// longest first: the elements of a secret list or map (its JSON text), each
// line of a multi-line secret (a diff prefixes every line with + or -, so
// the whole value never appears in it) and the JSON-escaped value (output
// that embeds the secret in a JSON string).
func usable(secrets []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(secrets))
	add := func(x string) {
		if x != "" && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	queue := slices.Clone(secrets)
	for i := 0; i < len(queue); i++ {
		x := queue[i]
		if x == "" || seen[x] {
			continue
		}
		add(x)
		// A secret list or map input arrives as its JSON text, but a
		// task renders its elements one by one: each is secret too.
		queue = append(queue, jsonLeaves(x)...)
		for _, html := range []bool{false, true} {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if enc.Encode(x) == nil {
				add(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`))
			}
		}
		if strings.ContainsAny(x, "\r\n") {
			for _, line := range strings.FieldsFunc(x, func(r rune) bool { return r == '\n' || r == '\r' }) {
				if len(strings.TrimSpace(line)) >= minSecretLine {
					add(line)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func maskResult(r domain.Result, s []string) domain.Result {
	r.Stdout = maskString(r.Stdout, s)
	r.Stderr = maskString(r.Stderr, s)
	r.Msg = maskString(r.Msg, s)
	r.Diff = maskString(r.Diff, s)
	if r.Data != nil {
		r.Data = maskValue(r.Data, s).(map[string]any)
	}
	if r.Output != nil {
		r.Output = maskValue(r.Output, s).(map[string]any)
	}
	if r.Results != nil {
		rs := make([]domain.Result, len(r.Results))
		for i, x := range r.Results {
			rs[i] = maskResult(x, s)
		}
		r.Results = rs
	}
	if r.Tasks != nil {
		ts := make([]domain.TaskResult, len(r.Tasks))
		for i, x := range r.Tasks {
			x.Result = maskResult(x.Result, s)
			ts[i] = x
		}
		r.Tasks = ts
	}
	return r
}

// jsonLeaves returns the strings and numbers inside s when s is the JSON
// text of a list or a map (nil otherwise).
func jsonLeaves(s string) []string {
	if s[0] != '{' && s[0] != '[' {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case json.Number:
			out = append(out, x.String())
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// MaskString replaces every secret in str with **** (in the forms Mask
// finds them in).
func MaskString(str string, secrets []string) string {
	return maskString(str, usable(secrets))
}

func maskString(str string, secrets []string) string {
	for _, x := range secrets {
		if x != "" && strings.Contains(str, x) {
			str = strings.ReplaceAll(str, x, MaskText)
		}
	}
	return str
}

// MaskValue returns a copy of v with secrets masked in every string.
func MaskValue(v any, secrets []string) any {
	return maskValue(v, usable(secrets))
}

func maskValue(v any, secrets []string) any {
	switch x := v.(type) {
	case string:
		return maskString(x, secrets)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = maskValue(e, secrets)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskValue(e, secrets)
		}
		return out
	}
	// A number whose text is a secret (derived from one) is masked whole.
	if n, ok := numberText(v); ok && slices.Contains(secrets, n) {
		return MaskText
	}
	return v
}
