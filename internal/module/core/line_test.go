package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

func writeTestFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// applyTwice runs params: changed with want as the result, then unchanged
// and untouched; check mode beforehand reports a diff and touches nothing.
func applyTwice(t *testing.T, mod, p string, params map[string]any, want string) {
	t.Helper()
	var before snapshot
	exists := false
	if _, err := os.Lstat(p); err == nil {
		before, exists = snap(t, p), true
	}
	res := run(t, mod, params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if res.Diff == "" {
		t.Errorf("check mode: no diff")
	}
	if exists {
		before.untouched(t, p)
	} else if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("check mode created %s", p)
	}
	wantChanged(t, run(t, mod, params, nil), true)
	if got := readFile(t, p); got != want {
		t.Fatalf("%s content:\n%q\nwant:\n%q", mod, got, want)
	}
	after := snap(t, p)
	wantChanged(t, run(t, mod, params, nil), false)
	after.untouched(t, p)
}

func TestFileLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sshd_config")
	writeTestFile(t, p, "Port 22\n#PermitRootLogin yes\nUsePAM yes\n")

	// Replace the line a regexp matches (the hardened sshd idiom).
	applyTwice(t, "core.file.line", p, map[string]any{"path": p, "regexp": "^#?PermitRootLogin", "line": "PermitRootLogin no"},
		"Port 22\nPermitRootLogin no\nUsePAM yes\n")
	// No match: appended at EOF by default; after a regexp; before BOF.
	applyTwice(t, "core.file.line", p, map[string]any{"path": p, "regexp": "^PasswordAuthentication", "line": "PasswordAuthentication no"},
		"Port 22\nPermitRootLogin no\nUsePAM yes\nPasswordAuthentication no\n")
	applyTwice(t, "core.file.line", p, map[string]any{"path": p, "line": "AddressFamily inet", "insert_after": "^Port"},
		"Port 22\nAddressFamily inet\nPermitRootLogin no\nUsePAM yes\nPasswordAuthentication no\n")
	applyTwice(t, "core.file.line", p, map[string]any{"path": p, "line": "# managed", "insert_before": "BOF"},
		"# managed\nPort 22\nAddressFamily inet\nPermitRootLogin no\nUsePAM yes\nPasswordAuthentication no\n")
	applyTwice(t, "core.file.line", p, map[string]any{"path": p, "line": "Banner none", "insert_before": "^UsePAM"},
		"# managed\nPort 22\nAddressFamily inet\nPermitRootLogin no\nBanner none\nUsePAM yes\nPasswordAuthentication no\n")
	// A line already there (no regexp) is left alone wherever it is.
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.line", map[string]any{"path": p, "line": "Port 22", "insert_before": "BOF"}, nil), false)
	before.untouched(t, p)
	// state: absent removes every matching line.
	res := run(t, "core.file.line", map[string]any{"path": p, "regexp": "^(Banner|AddressFamily)", "state": "absent"}, nil)
	wantChanged(t, res, true)
	if res.Data["matched"] != int64(2) || !strings.Contains(res.Diff, "-Banner none") {
		t.Errorf("absent: data %v diff %q", res.Data, res.Diff)
	}
	applyTwice(t, "core.file.line", p, map[string]any{"path": p, "line": "# managed", "state": "absent"},
		"Port 22\nPermitRootLogin no\nUsePAM yes\nPasswordAuthentication no\n")

	// A missing file: an error unless create; absent is converged.
	missing := filepath.Join(dir, "limits.conf")
	_, err := runErr(t, "core.file.line", map[string]any{"path": missing, "line": "x"}, nil)
	wantErrContains(t, err, "does not exist", "create: true")
	wantChanged(t, run(t, "core.file.line", map[string]any{"path": missing, "line": "x", "state": "absent"}, nil), false)
	applyTwice(t, "core.file.line", missing, map[string]any{"path": missing, "line": "* hard core 0", "create": true, "mode": "0640"}, "* hard core 0\n")
	if fi, _ := os.Stat(missing); fi.Mode().Perm() != 0o640 {
		t.Errorf("created with mode %v", fi.Mode())
	}
	// A file without a final newline gets one only when edited.
	nonl := filepath.Join(dir, "nonl")
	writeTestFile(t, nonl, "a\nb")
	wantChanged(t, run(t, "core.file.line", map[string]any{"path": nonl, "line": "b"}, nil), false)
	applyTwice(t, "core.file.line", nonl, map[string]any{"path": nonl, "line": "c"}, "a\nb\nc\n")

	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"bad regexp", map[string]any{"path": p, "regexp": "(", "line": "x"}, `param "regexp"`},
		{"no line for present", map[string]any{"path": p, "regexp": "^x"}, `"line" is required`},
		{"neither", map[string]any{"path": p}, "line"},
		{"both positions", map[string]any{"path": p, "line": "x", "insert_after": "a", "insert_before": "b"}, "not both"},
		{"bad state", map[string]any{"path": p, "line": "x", "state": "gone"}, "present or absent"},
		{"relative", map[string]any{"path": "etc/x", "line": "x"}, "must be absolute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.file.line", tc.params, nil)
			wantErrContains(t, err, tc.want)
		})
	}
}

// validate: the new content is checked by a command before it replaces
// the file; a refusal leaves the file as it was and reports stderr.
func TestFileValidate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.conf")
	writeTestFile(t, p, "ok=1\n")
	before := snap(t, p)
	// The validator refuses content holding "bad".
	validator := `! grep -q bad %s || { echo "line 2: bad setting" >&2; exit 3; }`
	for _, tc := range []struct {
		mod    string
		params map[string]any
	}{
		{"core.file.present", map[string]any{"path": p, "content": "ok=1\nbad=2\n", "validate": validator}},
		{"core.file.line", map[string]any{"path": p, "line": "bad=2", "validate": validator}},
		{"core.file.block", map[string]any{"path": p, "block": "bad=2", "validate": validator}},
		{"core.file.replace", map[string]any{"path": p, "regexp": "ok", "replace": "bad", "validate": validator}},
	} {
		t.Run(tc.mod, func(t *testing.T) {
			res := run(t, tc.mod, tc.params, nil)
			if !res.Failed || res.RC != 3 || !strings.Contains(res.Stderr, "line 2: bad setting") || !strings.Contains(res.Msg, "left as it was") {
				t.Fatalf("result = %+v", res)
			}
			before.untouched(t, p)
		})
	}
	// Accepted content is written; the validator saw the new content.
	res := run(t, "core.file.line", map[string]any{"path": p, "line": "good=3", "validate": "grep -q good=3 %s"}, nil)
	wantChanged(t, res, true)
	if readFile(t, p) != "ok=1\ngood=3\n" {
		t.Fatalf("content %q", readFile(t, p))
	}
	_, err := runErr(t, "core.file.present", map[string]any{"path": p, "content": "x", "validate": "true"}, nil)
	wantErrContains(t, err, "must contain %s")
	// Check mode does not run the validator.
	res = run(t, "core.file.present", map[string]any{"path": p, "content": "bad\n", "validate": validator}, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Msg, "not run in check mode") {
		t.Errorf("check msg %q", res.Msg)
	}
}
