package core

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func TestExecRun(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		module string
		params map[string]any
		want   domain.Result // compared on Changed, Failed, RC, Stdout, Stderr
		msg    string        // substring of Msg
	}{
		{"shell pipeline", "core.exec.run", map[string]any{"command": "printf 'master\\nslave\\n' | head -1"},
			domain.Result{Changed: true, Stdout: "master"}, ""},
		{"argv without shell", "core.exec.run", map[string]any{"cmd": "printf", "args": []any{"%s|", "a b", "$HOME", "*"}},
			domain.Result{Changed: true, Stdout: "a b|$HOME|*|"}, ""},
		{"env added to base", "core.exec.run", map[string]any{"command": `echo "$GREETING $PATH"`, "env": map[string]any{"GREETING": "hi", "N": 3}},
			domain.Result{Changed: true, Stdout: "hi " + baseEnv()["PATH"]}, ""},
		{"cwd", "core.exec.run", map[string]any{"cmd": "pwd", "cwd": dir},
			domain.Result{Changed: true, Stdout: dir}, ""},
		{"stdin", "core.exec.run", map[string]any{"cmd": "tr", "args": []any{"a-z", "A-Z"}, "stdin": "hello"},
			domain.Result{Changed: true, Stdout: "HELLO"}, ""},
		{"non-zero exit", "core.exec.run", map[string]any{"command": "echo oops >&2; exit 3"},
			domain.Result{Changed: true, Failed: true, RC: 3, Stderr: "oops"}, "command exited with rc 3: oops"},
		{"program not found", "core.exec.run", map[string]any{"cmd": "soulstack-no-such-program"},
			domain.Result{Failed: true, RC: 127}, "executable file not found"},
		{"shell command not found", "core.exec.run", map[string]any{"command": "soulstack-no-such-program"},
			domain.Result{Changed: true, Failed: true, RC: 127}, "rc 127"},
		{"cmd.shell", "core.cmd.shell", map[string]any{"cmd": "echo $((1+2)) | tr 3 x"},
			domain.Result{Changed: true, Stdout: "x"}, ""},
		{"cmd.shell failure", "core.cmd.shell", map[string]any{"cmd": "false"},
			domain.Result{Changed: true, Failed: true, RC: 1}, "rc 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, tt.module, tt.params, nil)
			if strings.Contains(tt.name, "shell command not found") {
				res.Stderr = "" // the shell's wording varies
			}
			got := domain.Result{Changed: res.Changed, Failed: res.Failed, RC: res.RC, Stdout: res.Stdout, Stderr: res.Stderr}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nmsg: %s", diff, res.Msg)
			}
			if !strings.Contains(res.Msg, tt.msg) {
				t.Errorf("msg %q does not mention %q", res.Msg, tt.msg)
			}
		})
	}
}

func TestExecRunParamErrors(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"both", map[string]any{"command": "true", "cmd": "true"}, "exactly one of command, cmd"},
		{"neither", map[string]any{"env": map[string]any{}}, "exactly one of command, cmd"},
		{"args with command", map[string]any{"command": "true", "args": []any{"x"}}, "args goes with cmd"},
		{"args not strings", map[string]any{"cmd": "true", "args": []any{1}}, `"args" must be list[string]`},
		{"cwd missing", map[string]any{"cmd": "true", "cwd": "/no/such/dir"}, "cwd /no/such/dir"},
		{"cwd relative", map[string]any{"cmd": "true", "cwd": "tmp"}, "must be absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runErr(t, "core.exec.run", tt.params, nil)
			wantErrContains(t, err, tt.want)
		})
	}
}

func TestExecCheckModeDoesNotRun(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	for _, name := range []string{"core.exec.run", "core.cmd.shell"} {
		key := map[string]string{"core.exec.run": "command", "core.cmd.shell": "cmd"}[name]
		res := run(t, name, map[string]any{key: "touch " + marker}, &module.Env{Check: true})
		if !res.Skipped || res.Changed || res.Msg != "skipped in check mode" {
			t.Errorf("%s in check mode: %+v", name, res)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("a command ran in check mode")
	}
}

func TestExecRunUnderRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := &module.Env{Root: root}
	if res := run(t, "core.exec.run", map[string]any{"cmd": "pwd"}, env); res.Stdout != root {
		t.Errorf("default cwd under --root = %q, want the root", res.Stdout)
	}
	if res := run(t, "core.exec.run", map[string]any{"cmd": "pwd", "cwd": "/srv"}, env); res.Stdout != filepath.Join(root, "srv") {
		t.Errorf("cwd under --root = %q", res.Stdout)
	}
}

// TestExecTimeoutKillsProcessGroup runs a shell whose background grandchild
// ignores SIGTERM; when the deadline passes the whole group must die.
func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	m, _ := module.Lookup("core.exec.run")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	cmd := `sh -c 'trap "" TERM; echo $$ > ` + pidFile + `; exec sleep 300' & echo started; wait`
	start := time.Now()
	res, err := m.Apply(ctx, map[string]any{"command": cmd}, &module.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || !strings.Contains(res.Msg, "timed out") || !strings.Contains(res.Msg, "process group") {
		t.Errorf("result = %+v, want failed with a timeout message", res)
	}
	if res.Stdout != "started" {
		t.Errorf("stdout before the kill = %q", res.Stdout)
	}
	if took := time.Since(start); took > killGrace+3*time.Second {
		t.Errorf("took %v; the kill should take about %v", took, killGrace)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if alive(pid) {
		t.Fatalf("grandchild %d (ignoring SIGTERM) survived the timeout", pid)
	}
}

// alive reports whether pid runs (a zombie waiting to be reaped is dead).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func TestExecOutputCapped(t *testing.T) {
	res := run(t, "core.exec.run", map[string]any{"command": "head -c 3000000 /dev/zero | tr '\\0' a; echo err >&2"}, nil)
	if len(res.Stdout) != outputCap || res.Stderr != "err" || res.Failed {
		t.Fatalf("stdout %d bytes, stderr %q, failed %v", len(res.Stdout), res.Stderr, res.Failed)
	}
	if !strings.Contains(res.Msg, "truncated") {
		t.Errorf("msg %q does not note the truncation", res.Msg)
	}
}

func TestExecBackgroundChildHoldingOutput(t *testing.T) {
	t.Parallel()
	start := time.Now()
	res := run(t, "core.exec.run", map[string]any{"command": "sleep 30 & echo done"}, nil)
	if res.Failed || res.Stdout != "done" {
		t.Fatalf("result %+v", res)
	}
	if took := time.Since(start); took > killGrace+3*time.Second {
		t.Errorf("a background child holding stdout blocked the module for %v", took)
	}
	if !strings.Contains(res.Msg, "background process") {
		t.Errorf("msg %q does not explain the wait", res.Msg)
	}
}

func TestExecStdoutLikeAnsible(t *testing.T) {
	res := run(t, "core.exec.run", map[string]any{"command": "printf 'slave\\n'"}, nil)
	if res.Stdout != "slave" {
		t.Fatalf("stdout = %q: a trailing newline must be dropped so `stdout == 'slave'` holds", res.Stdout)
	}
	res = run(t, "core.exec.run", map[string]any{"command": "printf 'a\\nb\\n\\n'"}, nil)
	if d := cmp.Diff([]any{"a", "b"}, res.Data["stdout_lines"]); d != "" {
		t.Fatalf("stdout_lines (-want +got):\n%s", d)
	}
}
