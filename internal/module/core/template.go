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
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module"
)

// fileRendered renders a template of the bundle files (Go text/template
// with missingkey=error, or Jinja2 as Ansible renders it) and converges the
// file to the result like file.present.
func fileRendered(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name := a.str("template")
	vars := a.anyMap("vars")
	eng, err := parseEngine(a, name)
	if err != nil {
		return domain.Result{}, err
	}
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	out, err := renderWith(env, name, vars, eng)
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
	return renderWith(env, name, vars, engineOf(name))
}

// renderWith renders name with the engine eng chose.
func renderWith(env *module.Env, name string, vars map[string]any, eng engine) ([]byte, error) {
	if env.Files == nil {
		return nil, fmt.Errorf("template %s: no bundle files are available to this task (templates render inside a scenario or destiny)", name)
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
	if eng.jinja {
		return renderJinja(env, clean, vars, eng.opts)
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
	buf := &capBuffer{limit: MaxRenderedBytes}
	if err := t.Execute(buf, data); err != nil {
		return nil, fmt.Errorf("rendering template: %w", err)
	}
	return buf.Bytes(), nil
}

// MaxRenderedBytes bounds a rendered template (SPEC §7 decision: 16 MiB),
// on souls and on the Keeper alike (audit L4).
const MaxRenderedBytes = 16 << 20

// errTooLarge is returned once a rendered template passes MaxRenderedBytes.
var errTooLarge = fmt.Errorf("the rendered template is larger than %d MiB, the limit of a template", MaxRenderedBytes>>20)

// capBuffer is a bytes.Buffer that refuses to grow past limit.
type capBuffer struct {
	bytes.Buffer
	limit int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}

// checkSize refuses, before allocating, a helper output of n bytes.
func checkSize(fn string, n int) error {
	if n < 0 || n > MaxRenderedBytes {
		return fmt.Errorf("%s: the result would be %d bytes, over the %d MiB limit of a template", fn, n, MaxRenderedBytes>>20)
	}
	return nil
}

// templateFuncs are the helpers templates may use besides text/template's
// built-ins: sprig's hermetic set with our bounded helpers (see
// buildTemplateFuncs).
var templateFuncs = buildTemplateFuncs()

func joinAny(sep string, list any) (string, error) {
	rv := reflect.ValueOf(list)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return "", fmt.Errorf("join: want a list, got %T", list)
	}
	if err := checkSize("join", rv.Len()*len(sep)); err != nil {
		return "", err
	}
	parts := make([]string, rv.Len())
	for i := range parts {
		parts[i] = fmt.Sprint(rv.Index(i).Interface())
	}
	return strings.Join(parts, sep), nil
}

func toJSON(v any) (string, error) {
	if err := checkSize("toJSON", expr.SizeOf(v, MaxRenderedBytes)); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toJSON: %w", err)
	}
	return string(b), nil
}

// indent pads every non-empty line of s with n spaces; the result is
// bounded before it is built ({{ indent 300000000 "x" }} is refused).
func indent(n int, s string) (string, error) {
	if n < 0 {
		return "", fmt.Errorf("indent: negative count %d", n)
	}
	if n > MaxRenderedBytes || len(s)+n*(strings.Count(s, "\n")+1) > MaxRenderedBytes {
		return "", fmt.Errorf("indent %d: the result would be over the %d MiB limit of a template", n, MaxRenderedBytes>>20)
	}
	pad := strings.Repeat(" ", n)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n"), nil
}
