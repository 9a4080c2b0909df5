package executor

import (
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
)

// MaskText is what secret values are replaced with.
const MaskText = "****"

// Mask returns r with every occurrence of a secret value replaced by ****
// in its text fields, data, output and nested results. Empty secrets are
// ignored; longer secrets are replaced first so a secret containing another
// is masked whole.
func Mask(r domain.Result, secrets []string) domain.Result {
	s := usable(secrets)
	if len(s) == 0 {
		return r
	}
	return maskResult(r, s)
}

func usable(secrets []string) []string {
	out := make([]string, 0, len(secrets))
	for _, x := range secrets {
		if x != "" {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func maskResult(r domain.Result, s []string) domain.Result {
	r.Stdout = MaskString(r.Stdout, s)
	r.Stderr = MaskString(r.Stderr, s)
	r.Msg = MaskString(r.Msg, s)
	r.Diff = MaskString(r.Diff, s)
	if r.Data != nil {
		r.Data = MaskValue(r.Data, s).(map[string]any)
	}
	if r.Output != nil {
		r.Output = MaskValue(r.Output, s).(map[string]any)
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

// MaskString replaces every secret in str with ****.
func MaskString(str string, secrets []string) string {
	for _, x := range secrets {
		if x != "" && strings.Contains(str, x) {
			str = strings.ReplaceAll(str, x, MaskText)
		}
	}
	return str
}

// MaskValue returns a copy of v with secrets masked in every string.
func MaskValue(v any, secrets []string) any {
	switch x := v.(type) {
	case string:
		return MaskString(x, secrets)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = MaskValue(e, secrets)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = MaskValue(e, secrets)
		}
		return out
	}
	return v
}
