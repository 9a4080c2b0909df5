package devmode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/devmode"
	"github.com/soulstack/soulstack/internal/testutil"
)

// dev is a running dev mode of a test.
type dev struct {
	info   devmode.Info
	out    *testutil.Buffer
	config string
	stop   func() error // stops dev mode and returns Run's error
}

// startDev runs devmode.Run until the test ends (or stop).
func startDev(t *testing.T, dataDir string, souls int) *dev {
	t.Helper()
	return startDevConfig(t, dataDir, souls, "")
}

// startDevConfig is startDev with keeper dev --config configFile.
func startDevConfig(t *testing.T, dataDir string, souls int, configFile string) *dev {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &testutil.Buffer{}
	config := filepath.Join(dataDir+"-soulctl", "config.yaml")
	ready := make(chan devmode.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- devmode.Run(ctx, devmode.Options{
			DataDir: dataDir, Listen: "127.0.0.1:0", Souls: souls, NoSouls: souls == 0,
			SoulBin: filepath.Join(binDir, "soul"), SoulctlConfig: config, Out: out, Config: configFile,
			Ready: func(i devmode.Info) { ready <- i },
		})
	}()
	d := &dev{out: out, config: config}
	var once bool
	var runErr error
	d.stop = func() error {
		if !once {
			once = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() { _ = d.stop() })
	select {
	case d.info = <-ready:
	case err := <-done:
		t.Fatalf("dev mode stopped before it was ready: %v\n%s", err, out.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("dev mode not ready in 90s:\n%s", out.String())
	}
	return d
}

// soulctl runs soulctl with the config dev mode wrote, stdout not a
// terminal.
func (d *dev) soulctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	g := &cli.Globals{
		Getenv:   func(k string) string { return map[string]string{cli.EnvConfig: d.config}[k] },
		Stdin:    strings.NewReader(""),
		Terminal: func() bool { return false },
	}
	code := g.Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestDevMode is keeper dev end to end: real soul processes with covens,
// the example registered, soulctl configured; an incarnation created with
// --watch (the non-terminal progress form) is ready across the souls with
// its state committed and its files in each soul's own root; a failed run
// locks it; Ctrl-C stops the souls; a second start reuses everything.
func TestDevMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	d := startDev(t, dir, 3)

	for _, want := range []string{"Soul Stack dev keeper is up", d.info.URL + "/ui", d.info.Token,
		"dev-soul-1 [dev,web], dev-soul-2 [dev,web], dev-soul-3 [dev,db]",
		"soulctl incarnation create hello-dev --service hello --covens dev --watch", "Ctrl-C stops"} {
		if !strings.Contains(d.out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, d.out.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, devmode.TokenFile)); err != nil || strings.TrimSpace(string(b)) != d.info.Token {
		t.Errorf("token file: %q, %v", b, err)
	}
	s, err := cli.LoadSettings(d.config)
	if err != nil || s.Keeper != d.info.URL || s.Token != d.info.Token {
		t.Fatalf("soulctl config %+v, %v", s, err)
	}

	code, out, errs := d.soulctl(t, "souls", "list", "-o", "json")
	var souls []struct {
		SID    string   `json:"sid"`
		Status string   `json:"status"`
		Covens []string `json:"covens"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &souls) != nil || len(souls) != 3 {
		t.Fatalf("souls list: exit %d %s\n%s", code, errs, out)
	}
	for _, s := range souls {
		if s.Status != "connected" || !strings.HasPrefix(s.SID, "dev-soul-") {
			t.Errorf("soul %+v", s)
		}
	}

	// The non-terminal --watch form: plain lines, one per task, then the
	// incarnation with its committed state.
	code, out, errs = d.soulctl(t, "incarnation", "create", "hello-dev", "--service", "hello", "--covens", "dev", "--watch")
	if code != 0 {
		t.Fatalf("incarnation create: exit %d\n%s\n%s", code, out, errs)
	}
	for _, re := range []string{
		`(?m)^run [0-9a-f-]+: scenario create on incarnation hello-dev$`,
		`(?m)^  \[ok\] Write the greeting: 3/3 ok, 3 changed \(\d+m?s\)$`,
		`(?m)^  \[ok\] Mark the web hosts: 2/2 ok, 2 changed \(\d+m?s\)$`,
		`(?m)^  \[ok\] Mark the database hosts: 1/1 ok, 1 changed \(\d+m?s\)$`,
		`(?m)^  \[ok\] Check the greeting is served: 3/3 ok \(\d+m?s\)$`,
		`(?m)^\[ok\] succeeded in [\d.]+m?s: 6 tasks, 3 hosts, 12 changed$`,
		`(?m)^Status: +ready$`,
		`(?m)^Members: +dev-soul-1, dev-soul-2, dev-soul-3 \(3\)$`,
		`(?m)^  greeted_hosts: 3$`,
		`(?m)^  greeting: Hello from Soul Stack$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("create --watch output does not match %s:\n%s", re, out)
		}
	}
	if strings.ContainsAny(out, "\r\033") {
		t.Errorf("terminal control sequences in the non-terminal form: %q", out)
	}
	for i, sd := range d.info.Souls {
		b, err := os.ReadFile(filepath.Join(sd.Root, "srv", "hello", "greeting.txt"))
		if want := "Hello from Soul Stack (from " + sd.SID + ")\n"; err != nil || string(b) != want {
			t.Errorf("soul %d greeting: %q, %v; want %q", i+1, b, err, want)
		}
		role, _ := os.ReadFile(filepath.Join(sd.Root, "srv", "hello", "role"))
		if want := sd.Covens[1] + "\n"; string(role) != want {
			t.Errorf("soul %s role %q, want %q", sd.SID, role, want)
		}
	}

	// A failed run: exit 1, the host's stderr, the incarnation locked.
	code, out, errs = d.soulctl(t, "incarnation", "run", "hello-dev", "--scenario", "break", "--input", `{"host": "dev-soul-2"}`, "--watch")
	if code != 1 || !strings.Contains(out, "[FAILED] Fail on one host: 0/1 ok, 1 failed") ||
		!strings.Contains(out, "dev-soul-2: failed (rc 1)") || !strings.Contains(out, "the disk is full") ||
		!strings.Contains(errs, "incarnation unlock --name hello-dev") {
		t.Errorf("break --watch: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = d.soulctl(t, "incarnation", "show", "hello-dev", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "status: error_locked") || !strings.Contains(out, "greeting: Hello from Soul Stack") {
		t.Errorf("show after a failure: exit %d\n%s", code, out)
	}
	if code, out, errs = d.soulctl(t, "incarnation", "unlock", "hello-dev", "--reason", "test"); code != 0 {
		t.Errorf("unlock: exit %d\n%s%s", code, out, errs)
	}

	// Stop: the souls end with dev mode.
	if err := d.stop(); err != nil {
		t.Fatalf("dev mode: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, devmode.StateFile)); !os.IsNotExist(err) {
		t.Errorf("dev.json left behind: %v", err)
	}
	for _, sd := range d.info.Souls {
		if pids := processesWith(sd.DataDir); len(pids) > 0 {
			t.Errorf("soul %s still running: pids %v", sd.SID, pids)
		}
	}

	// A second start reuses the keeper, the token and the souls.
	d2 := startDev(t, dir, 3)
	if d2.info.Token != d.info.Token || strings.Contains(d2.out.String(), "initialized a new keeper") {
		t.Errorf("second start did not reuse the keeper:\n%s", d2.out.String())
	}
	code, out, errs = d2.soulctl(t, "incarnation", "run", "hello-dev", "--scenario", "greet", "--input", `{"greeting": "Again"}`, "--wait", "-o", "json")
	var run struct {
		Status string `json:"status"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &run) != nil || run.Status != "succeeded" {
		t.Fatalf("greet after a restart: exit %d\n%s\n%s", code, out, errs)
	}
}

// processesWith lists the pids whose command line mentions s.
func processesWith(s string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
