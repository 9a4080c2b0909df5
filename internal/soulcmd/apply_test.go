package soulcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type applyOut struct {
	Tasks []struct {
		Name    string `json:"name"`
		Status  string `json:"status"`
		Changed bool   `json:"changed"`
	} `json:"tasks"`
	Output map[string]any `json:"output"`
	Failed bool           `json:"failed"`
}

func runApply(t *testing.T, args ...string) (applyOut, int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"apply"}, args...), &stdout, &stderr)
	var out applyOut
	if stdout.Len() > 0 {
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
		}
	}
	return out, code, stderr.String()
}

func TestApplyLocalTwiceSecondUnchanged(t *testing.T) {
	root := t.TempDir()
	dir := "../executor/testdata/site"
	first, code, stderr := runApply(t, "--local", dir, "--root", root, "--sid", "h1", "-o", "json", "--input", `{"title":"Hi"}`)
	if code != 0 || first.Failed {
		t.Fatalf("first apply: exit %d, stderr %s", code, stderr)
	}
	changed := 0
	for _, tk := range first.Tasks {
		if tk.Changed {
			changed++
		}
	}
	if changed != 3 {
		t.Fatalf("first apply changed %d tasks, want 3: %+v", changed, first.Tasks)
	}
	if _, err := os.Stat(filepath.Join(root, "srv/site/index.html")); err != nil {
		t.Fatalf("index.html not written under --root: %v", err)
	}
	second, code, stderr := runApply(t, "--local", dir, "--root", root, "--sid", "h1", "-o", "json", "--input", `{"title":"Hi"}`)
	if code != 0 {
		t.Fatalf("second apply: exit %d, stderr %s", code, stderr)
	}
	for _, tk := range second.Tasks {
		if tk.Changed {
			t.Errorf("second apply changed %q", tk.Name)
		}
	}
	if second.Output["index_changed"] != false {
		t.Errorf("output.index_changed = %v, want false", second.Output["index_changed"])
	}
}

func TestApplyLocalFailureExitsOne(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.yml"), []byte("tasks:\n  - {name: boom, module: core.test.fail, params: {message: nope}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code, _ := runApply(t, "--local", dir, "--root", t.TempDir(), "-o", "json")
	if code != 1 || !out.Failed || out.Tasks[0].Status != "failed" {
		t.Fatalf("exit %d, out %+v", code, out)
	}
	// An invalid destiny is a failed apply with the validator's message.
	if err := os.WriteFile(filepath.Join(dir, "main.yml"), []byte("tasks:\n  - {name: x, module: core.test.ping, onchange: [y]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, code, stderr := runApply(t, "--local", dir, "--root", t.TempDir(), "-o", "json")
	if code != 1 || !bytes.Contains([]byte(stderr), []byte("onchange")) {
		t.Fatalf("invalid destiny: exit %d, stderr %s", code, stderr)
	}
}

// SPEC §10.3: a local apply is recorded in the soul's task log like work
// from a Keeper (no params values).
func TestApplyLocalRecordsTasks(t *testing.T) {
	root, data := t.TempDir(), t.TempDir()
	_, code, stderr := runApply(t, "--local", "../executor/testdata/site", "--root", root, "--sid", "h1", "-o", "json",
		"--input", `{"title":"Secret-Title-42"}`, "--data-dir", data)
	if code != 0 {
		t.Fatalf("apply: exit %d, stderr %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(data, "tasks.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) < 2 || strings.Contains(string(raw), "Secret-Title-42") {
		t.Fatalf("record:\n%s", raw)
	}
	if !strings.Contains(lines[len(lines)-1], `"destiny":"site"`) || !strings.Contains(lines[0], `"module":"core.`) {
		t.Fatalf("record:\n%s", raw)
	}
}

// TestApplyLocalWhenSkippedRegisterIsEmpty (SPEC §7, §17): in soul apply
// --local too, a task skipped by when: did not answer, and a register
// inside a skipped block is empty rather than undefined.
func TestApplyLocalWhenSkippedRegisterIsEmpty(t *testing.T) {
	dir := t.TempDir()
	destiny := `tasks:
  - name: skipped
    module: core.test.echo
    register: x
    when: "false"
    params: {message: hi}
  - name: gated
    when: "false"
    block:
      - name: inner
        module: core.test.echo
        register: inner
        params: {message: hi}
output:
  n: "${ size(register.x) }"
  hosts: "${ register.x.hosts }"
  inner: "${ size(register.inner) }"
`
	if err := os.WriteFile(filepath.Join(dir, "main.yml"), []byte(destiny), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code, stderr := runApply(t, "--local", dir, "--root", t.TempDir(), "--sid", "h1", "-o", "json")
	if code != 0 || out.Failed {
		t.Fatalf("exit %d, out %+v, stderr %s", code, out, stderr)
	}
	if out.Output["n"] != float64(0) || out.Output["inner"] != float64(0) || len(out.Output["hosts"].(map[string]any)) != 0 {
		t.Fatalf("output = %v, want n 0, inner 0, hosts {}", out.Output)
	}
}

// TestCustomModuleRefusedUnderRoot (issue 35): --root cannot confine the
// program of a custom module (it would write the real filesystem, as
// examples/web's service.site_health wrote /var/www under keeper dev), so
// a soul under --root refuses to start it, with a clear message, and the
// path outside the root is never written.
func TestCustomModuleRefusedUnderRoot(t *testing.T) {
	repo := t.TempDir()
	outside := filepath.Join(t.TempDir(), "written-outside-root")
	files := map[string]string{
		"modules/touch/module.yml": "summary: writes a file\nparams:\n  path: {type: string, required: true}\n",
		"modules/touch/run":        "#!/bin/sh\ncat >/dev/null\n: > \"$SOUL_PARAM_PATH\"\necho '{\"changed\": true}'\n",
		"destiny/d/main.yml":       "tasks:\n  - name: touch\n    module: service.touch\n    params: {path: \"" + outside + "\"}\n",
	}
	for name, body := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, code, _ := runApply(t, "--local", filepath.Join(repo, "destiny/d"), "--root", t.TempDir(), "--sid", "h1", "-o", "json")
	if code != 1 || !out.Failed || len(out.Tasks) != 1 || out.Tasks[0].Status != "failed" {
		t.Fatalf("exit %d, out %+v, want the task failed", code, out)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the custom module ran under --root and wrote outside it")
	}
	var stdout, stderr bytes.Buffer
	Main(context.Background(), []string{"apply", "--local", filepath.Join(repo, "destiny/d"), "--root", t.TempDir(), "-o", "table"}, &stdout, &stderr)
	if !strings.Contains(stdout.String()+stderr.String(), "cannot be confined to --root") {
		t.Fatalf("no clear message:\n%s\n%s", stdout.String(), stderr.String())
	}
}
