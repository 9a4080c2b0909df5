package executor

import (
	"context"
	"fmt"
	"maps"
	"path"
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
			if m, ok := vf.Data[name]; ok {
				maps.Copy(out, m)
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
