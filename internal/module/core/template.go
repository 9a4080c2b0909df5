package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"reflect"
	"strings"
	"text/template"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// fileRendered renders a Go text/template from the bundle files with
// missingkey=error and converges the file to the result like file.present.
func fileRendered(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name := a.str("template")
	vars := a.anyMap("vars")
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	out, err := renderTemplate(env, name, vars)
	if err != nil {
		return domain.Result{}, err
	}
	w.content, w.hasContent = out, true
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["template"] = name
	}
	return res, err
}

// renderTemplate renders the template at name (relative to the bundle
// root) with env.TemplateData overlaid by vars. The vars are visible both at
// the top level ({{ .port }}) and under .vars ({{ .vars.port }}), next to the
// task vars the executor put there.
func renderTemplate(env *module.Env, name string, vars map[string]any) ([]byte, error) {
	if env.Files == nil {
		return nil, fmt.Errorf("template %s: no bundle files are available to this task (core.file.rendered runs inside a scenario or destiny)", name)
	}
	clean := strings.TrimPrefix(name, "./")
	if !fs.ValidPath(clean) {
		return nil, fmt.Errorf("template path %q must be relative to the scenario or destiny directory, without '..'", name)
	}
	src, err := fs.ReadFile(env.Files, clean)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("template %s not found in the scenario or destiny directory", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading template %s: %w", name, err)
	}
	t, err := template.New(clean).Option("missingkey=error").Funcs(templateFuncs).Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("parsing template: %w", err)
	}
	data := make(map[string]any, len(env.TemplateData)+len(vars)+1)
	maps.Copy(data, env.TemplateData)
	maps.Copy(data, vars)
	if len(vars) > 0 {
		merged := map[string]any{}
		if tv, ok := env.TemplateData["vars"].(map[string]any); ok {
			maps.Copy(merged, tv)
		}
		maps.Copy(merged, vars)
		data["vars"] = merged
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("rendering template: %w", err)
	}
	return buf.Bytes(), nil
}

// templateFuncs are the helpers templates may use besides text/template's
// built-ins.
var templateFuncs = template.FuncMap{
	"join":   joinAny,
	"toJSON": toJSON,
	"upper":  strings.ToUpper,
	"lower":  strings.ToLower,
	"trim":   strings.TrimSpace,
	"indent": indent,
	"quote":  func(s any) string { return fmt.Sprintf("%q", fmt.Sprint(s)) },
}

func joinAny(sep string, list any) (string, error) {
	rv := reflect.ValueOf(list)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return "", fmt.Errorf("join: want a list, got %T", list)
	}
	parts := make([]string, rv.Len())
	for i := range parts {
		parts[i] = fmt.Sprint(rv.Index(i).Interface())
	}
	return strings.Join(parts, sep), nil
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toJSON: %w", err)
	}
	return string(b), nil
}

func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}
