package modules

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/lab/labtest"
)

// exampleRepo is the example service with a shell and a Python custom
// module (SPEC §9 "Custom modules").
const exampleRepo = "../../examples/custom-modules"

// copyRepo copies the service repository src into dst on the host,
// keeping the programs' executable bits.
func copyRepo(t *testing.T, h *lab.Host, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return h.WriteFile(path.Join(dst, filepath.ToSlash(rel)), data, st.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// destinyRun is what `soul apply --local -o json` printed.
type destinyRun struct {
	Tasks  []taskResult   `json:"tasks"`
	Output map[string]any `json:"output"`
	Failed bool           `json:"failed"`
	Msg    string         `json:"msg"`
}

// applyDestiny runs destiny dir on the host with the real soul as root,
// with input; it returns the decoded output (zero when the soul printed
// none) and stderr whatever the exit status.
func applyDestiny(t *testing.T, h *lab.Host, dir string, input map[string]any, check bool) (destinyRun, string) {
	t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"soul", "apply", "--local", dir, "--sid", "lab", "-o", "json", "--input", string(in)}
	if check {
		argv = append(argv, "--check")
	}
	// Under the packaged soul unit's sandbox, as every module of the suite.
	if argv, err = labtest.SoulSandbox(argv...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, err := h.Command(ctx, argv...)
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("soul apply: %v\n%s", err, errb.String())
	}
	var run destinyRun
	if len(out) > 0 {
		if err := json.Unmarshal(out, &run); err != nil {
			t.Fatalf("soul apply output %q (stderr %q): %v", out, errb.String(), err)
		}
	}
	return run, errb.String()
}

func byName(t *testing.T, run destinyRun, name string) taskResult {
	t.Helper()
	for _, r := range run.Tasks {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no task %q in %+v", name, run)
	return taskResult{}
}

// TestCustomModulesExample runs examples/custom-modules' host destiny on a
// lab host as root: its shell module (service.motd) and Python module
// (service.ini_value) converge, with the destiny's vars_files picking the
// Debian defaults on the host; nothing changes the second time (files
// untouched), and check mode shows a diff and touches nothing.
func TestCustomModulesExample(t *testing.T) {
	h := host(t)
	copyRepo(t, h, exampleRepo, "/root/custom-modules")
	dir := "/root/custom-modules/destiny/host"
	input := map[string]any{
		"banner": "Lab host", "service": "custom-modules", "environment": "lab",
		"journald": map[string]any{"SystemMaxUse": "200M", "Compress": "yes"},
	}
	conf := "/etc/systemd/journald.conf.d/soulstack.conf"
	sh(t, h, "rm -f /etc/motd "+conf)

	// Check mode on the fresh host: the shell module says what it would
	// write, the Python one is skipped while python3 is not installed yet
	// (or runs in check mode if it is); nothing is written.
	run, stderr := applyDestiny(t, h, dir, input, true)
	if run.Failed {
		t.Fatalf("first check run: %+v (stderr %q)", run, stderr)
	}
	if r := byName(t, run, "Say who owns this host"); !r.Changed || !strings.Contains(r.Diff, "+Lab host") {
		t.Errorf("first check run, motd: %+v", r)
	}
	if got := sh(t, h, "test ! -e /etc/motd && test ! -e "+conf+" && echo clean || ls -l /etc/motd "+conf+" 2>&1"); got != "clean\n" {
		t.Errorf("the check run wrote files: %s", got)
	}

	run, stderr = applyDestiny(t, h, dir, input, false)
	if run.Failed || len(run.Tasks) == 0 {
		t.Fatalf("first apply: %+v (stderr %q)", run, stderr)
	}
	for _, name := range []string{"Say who owns this host", "Bound the journal"} {
		if r := byName(t, run, name); !r.Changed || r.Failed {
			t.Fatalf("first apply, %s: %+v", name, r)
		}
	}
	if r := byName(t, run, "Restart journald for its new settings"); !r.Changed {
		t.Errorf("journald was not restarted after its drop-in changed: %+v", r)
	}
	if got := run.Output["motd_lines"]; got != float64(4) {
		t.Errorf("output motd_lines = %v, want 4 (the module's typed output)", got)
	}
	if motd := sh(t, h, "cat /etc/motd"); !strings.Contains(motd, "service custom-modules, environment lab") {
		t.Errorf("/etc/motd = %q", motd)
	}
	// Storage comes from the destiny's vars_files: vars/debian.yml on this
	// Debian host (vars/default.yml says auto).
	if got := sh(t, h, "cat "+conf); got != "[Journal]\nCompress=yes\nStorage=persistent\nSystemMaxUse=200M\n" {
		t.Errorf("%s = %q", conf, got)
	}
	before := stamp(t, h, "/etc/motd") + stamp(t, h, conf)

	run, stderr = applyDestiny(t, h, dir, input, false)
	if run.Failed {
		t.Fatalf("second apply: %+v (stderr %q)", run, stderr)
	}
	for _, r := range run.Tasks {
		if r.Changed {
			t.Errorf("second apply changed %q: %+v", r.Name, r)
		}
	}
	if now := stamp(t, h, "/etc/motd") + stamp(t, h, conf); now != before {
		t.Errorf("second apply touched the files:\n%s->\n%s", before, now)
	}

	input["environment"] = "staging"
	input["journald"] = map[string]any{"SystemMaxUse": "100M", "Compress": "yes"}
	run, stderr = applyDestiny(t, h, dir, input, true)
	if run.Failed {
		t.Fatalf("check mode: %+v (stderr %q)", run, stderr)
	}
	if r := byName(t, run, "Say who owns this host"); !r.Changed || !strings.Contains(r.Diff, "+Managed by Soul Stack: service custom-modules, environment staging.") {
		t.Errorf("check mode, motd: %+v", r)
	}
	if r := byName(t, run, "Bound the journal"); !r.Changed {
		t.Errorf("check mode, ini_value: %+v", r)
	}
	if now := stamp(t, h, "/etc/motd") + stamp(t, h, conf); now != before {
		t.Errorf("check mode touched the files:\n%s->\n%s", before, now)
	}
}

// faultSpec is the module.yml of the fault modules.
const faultSpec = `summary: a module that misbehaves
check_mode: true
timeout: 2s
max_output: 1000
params:
  n: {type: integer, default: 1}
`

// TestCustomModuleFaults runs misbehaving custom modules through the real
// soul as root: each fault fails the task with a clear message naming the
// module and the host (a bad param, also the param), and a program that is
// missing or not executable is refused before anything runs.
func TestCustomModuleFaults(t *testing.T) {
	h := host(t)
	hostname := strings.TrimSpace(sh(t, h, "hostname"))
	programs := map[string]string{
		"nojson":    "#!/bin/sh\necho 'all good!'\n",
		"big":       "#!/bin/sh\nhead -c 100000 /dev/zero | tr '\\0' x\n",
		"slow":      "#!/bin/sh\nsleep 60\n",
		"nointerp":  "#!/usr/bin/python2.7\nprint 1\n",
		"badoutput": "#!/bin/sh\necho '{\"changed\":true,\"output\":{\"n\":1}}'\n",
	}
	const repo = "/root/custom-faults"
	sh(t, h, "rm -rf "+repo)
	for name, prog := range programs {
		if err := h.WriteFile(repo+"/modules/"+name+"/module.yml", []byte(faultSpec), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := h.WriteFile(repo+"/modules/"+name+"/run", []byte(prog), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		module, params string
		want           []string
	}{
		{"nojson", "{}", []string{"no valid JSON result", `"all good!"`}},
		{"big", "{}", []string{"more than 1000 bytes on stdout", "max_output"}},
		{"slow", "{}", []string{"timed out after 2s"}},
		{"nointerp", "{}", []string{"cannot start modules/nointerp/run", "interpreter"}},
		{"badoutput", "{}", []string{`output field "n"`, "does not declare"}},
		{"nojson", `{n: '${ from_json("\"xy\"") }'}`, []string{`param "n" must be integer`}},
	}
	for _, c := range cases {
		t.Run(c.module, func(t *testing.T) {
			dir := repo + "/destiny/" + c.module
			main := "tasks:\n  - name: fault\n    module: service." + c.module + "\n    params: " + c.params + "\n"
			if err := h.WriteFile(dir+"/main.yml", []byte(main), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			run, stderr := applyDestiny(t, h, dir, nil, false)
			if len(run.Tasks) != 1 || !run.Tasks[0].Failed {
				t.Fatalf("%+v (stderr %q)", run, stderr)
			}
			msg := run.Tasks[0].Msg
			for _, w := range append([]string{"service." + c.module + " on " + hostname + ":"}, c.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
	if left := sh(t, h, "ls /tmp | grep soulstack-module- || true"); left != "" {
		t.Errorf("programs left behind in /tmp: %s", left)
	}
	if left := sh(t, h, "pgrep -fx 'sleep 60' || true"); left != "" {
		t.Errorf("the timed-out program's process is still running: %s", left)
	}

	// Refused at load time, before anything runs: the program missing or
	// not executable.
	sh(t, h, "chmod -x "+repo+"/modules/nojson/run && rm "+repo+"/modules/big/run")
	run, stderr := applyDestiny(t, h, repo+"/destiny/slow", nil, false)
	if len(run.Tasks) != 0 {
		t.Fatalf("a repository with broken modules ran: %+v", run)
	}
	for _, w := range []string{"modules/nojson/run is not executable", "modules/big/run: the module's program is missing"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q does not say %q", stderr, w)
		}
	}
}
