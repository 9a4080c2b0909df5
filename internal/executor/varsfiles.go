package executor

import (
	"context"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
)

// VarsFromFiles resolves vars_files entries for the host of act (SPEC §9):
// for each entry the first alternative that names an existing file of the
// unit, its ${ } rendered for the host; the files' values are merged in
// order, later entries winning. The error names the entry and the paths
// tried.
func VarsFromFiles(ctx context.Context, env *expr.Env, vfs []dsl.VarsFile, act *expr.Activation) (map[string]any, error) {
	out := map[string]any{}
	for _, vf := range vfs {
		var tried []string
		found := false
		for _, alt := range vf.Alternatives {
			v, err := env.Render(ctx, alt, act)
			if err != nil {
				return nil, fmt.Errorf("vars_files (%s): %s: %w", vf.Pos, alt, err)
			}
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("vars_files (%s): %s yields %T, not a path", vf.Pos, alt, v)
			}
			name := path.Clean(strings.TrimPrefix(s, "./"))
			tried = append(tried, name)
			key, ok := dsl.RepoKey(vf.Dir, name)
			if !ok {
				return nil, fmt.Errorf("vars_files (%s): %s leaves the repository", vf.Pos, name)
			}
			if m, ok := vf.Data[key]; ok {
				rendered, err := renderVars(ctx, env, m, out, act)
				if err != nil {
					return nil, fmt.Errorf("vars_files (%s): %s: %w", vf.Pos, name, err)
				}
				maps.Copy(out, rendered)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("vars_files (%s): none of %s exists for this host", vf.Pos, strings.Join(tried, ", "))
		}
	}
	return out, nil
}

// renderVars renders the ${ } of a vars file's values for the host, as
// Ansible evaluates a vars file's {{ }} lazily: a value sees the vars
// known before this file (act.Vars and the earlier entries, so) and the
// file's other values, in whatever order they depend on each other. A
// value that never renders (an undefined name, a cycle) is the error.
func renderVars(ctx context.Context, env *expr.Env, m, before map[string]any, act *expr.Activation) (map[string]any, error) {
	out := maps.Clone(m)
	pending := map[string]bool{}
	for k, v := range m {
		if holdsInterpolation(v) {
			pending[k] = true
		}
	}
	for len(pending) > 0 {
		vars := maps.Clone(act.Vars)
		if vars == nil {
			vars = map[string]any{}
		}
		maps.Copy(vars, before)
		for k, v := range out {
			if !pending[k] {
				vars[k] = v
			}
		}
		c := *act
		c.Vars = vars
		var firstErr error
		progress := false
		for _, k := range slices.Sorted(maps.Keys(pending)) {
			if refsPending(m[k], pending, k) {
				continue
			}
			v, err := env.Render(ctx, m[k], &c)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", k, err)
				}
				continue
			}
			out[k] = v
			delete(pending, k)
			progress = true
		}
		if !progress {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: the values read each other in a cycle", strings.Join(slices.Sorted(maps.Keys(pending)), ", "))
			}
			return nil, firstErr
		}
	}
	return out, nil
}

// holdsInterpolation reports whether v holds a ${ } anywhere.
func holdsInterpolation(v any) bool {
	switch x := v.(type) {
	case string:
		return expr.HasInterpolation(x)
	case map[string]any:
		for _, e := range x {
			if holdsInterpolation(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsInterpolation(e) {
				return true
			}
		}
	}
	return false
}

// refsPending reports whether v's text names vars.<k> of another pending
// key: it is rendered after them.
func refsPending(v any, pending map[string]bool, self string) bool {
	var text []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			text = append(text, x)
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	s := strings.Join(text, "\n")
	for k := range pending {
		if k != self && regexp.MustCompile(`\bvars\.`+regexp.QuoteMeta(k)+`\b`).MatchString(s) {
			return true
		}
	}
	return false
}
