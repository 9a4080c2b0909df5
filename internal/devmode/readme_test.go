package devmode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/config"
)

// Markers around the tour in docs/tour.md: its sh blocks are run, in
// order. The README's short tour (between the readme-tour markers) is made
// of blocks of that tour, so it is run too.
const (
	tourBegin      = "<!-- readme-check: begin"
	tourEnd        = "<!-- readme-check: end -->"
	readmeTourFrom = "<!-- readme-tour: begin"
	readmeTourTo   = "<!-- readme-tour: end -->"
	tourPage       = "docs/tour.md"
)

// between returns the text of md between the markers begin and end.
func between(t *testing.T, md, file, begin, end string) string {
	t.Helper()
	i, j := strings.Index(md, begin), strings.Index(md, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q … %q markers", file, begin, end)
	}
	return md[i:j]
}

// readmeTour returns the sh code blocks of the tour (docs/tour.md), and
// the two-command block at the top of the README. Every sh block of the
// README's short tour must be one of the tour's blocks, as written.
func readmeTour(t *testing.T) (top string, blocks []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	all := shBlocks(readme)
	if len(all) == 0 {
		t.Fatal("README has no sh blocks")
	}
	page, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(tourPage)))
	if err != nil {
		t.Fatal(err)
	}
	blocks = shBlocks(between(t, string(page), tourPage, tourBegin, tourEnd))
	if len(blocks) < 5 {
		t.Fatalf("the tour has %d sh blocks; the markers are misplaced", len(blocks))
	}
	short := shBlocks(between(t, readme, "README.md", readmeTourFrom, readmeTourTo))
	if len(short) < 2 {
		t.Fatalf("the README's short tour has %d sh blocks", len(short))
	}
	for _, s := range short {
		if !slices.Contains(blocks, s) {
			t.Errorf("the README's short tour block\n%s\nis not a block of the tour in %s (so it would not be run): copy it from there", s, tourPage)
		}
	}
	return all[0], blocks
}

// shBlocks extracts the ```sh fenced blocks of markdown.
func shBlocks(md string) []string {
	var out []string
	var cur []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(l) == "```":
			in = false
			out = append(out, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, l)
		}
	}
	return out
}

// TestReadme does what the README tells a new user: its first command,
// `make demo` (into a temporary data dir and bin dir, on any free port),
// must end with the incarnation ready across 3 souls and its state printed
// in under a minute after the build; then every command of the tour runs,
// in order, as written (the Keeper's address substituted), against that
// keeper dev; then `make demo-stop`.
func TestReadme(t *testing.T) {
	for _, tool := range []string{"bash", "make", "git", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's commands need %s, which is not installed", tool)
		}
	}
	top, tour := readmeTour(t)
	if !strings.Contains(top, "make demo") || !strings.Contains(top, "make test") {
		t.Fatalf("the README's first block is not the two commands:\n%s", top)
	}

	work := t.TempDir()
	home := filepath.Join(work, "home")
	for _, d := range []string{home, filepath.Join(work, "config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The tour runs from a directory that looks like the repository:
	// examples/ and bin/ are there, .soulstack-dev/ is created there.
	for name, target := range map[string]string{"examples": filepath.Join(repoRoot, "examples"), "bin": binDir} {
		if err := os.Symlink(target, filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := append(append(cleanEnv(), goEnv...),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(work, "config"),
		"SOULSTACK_DEV_DIR="+filepath.Join(work, ".soulstack-dev"),
		"SOULSTACK_DEV_LISTEN=127.0.0.1:0",
	)
	runMake := func(target string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", repoRoot, target, "BIN="+binDir)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "demo.sh"), "stop")
		cmd.Env = env
		_ = cmd.Run()
	})

	began := time.Now()
	demo := runMake("demo")
	t.Logf("make demo: %s", time.Since(began))
	for _, re := range []string{
		`(?m)^dev-soul-3 +connected +db,dev `,
		`(?m)^  \[ok\] Write the greeting: 3/3 ok, 3 changed`,
		`(?m)^\[ok\] succeeded in `,
		`(?m)^Status: +ready$`,
		`(?m)^Members: +dev-soul-1, dev-soul-2, dev-soul-3 \(3\)$`,
		`(?m)^  greeted_hosts: 3$`,
		`(?m)^  greeting: Hello from the Soul Stack demo$`,
		`Stop everything with: make demo-stop`,
	} {
		if !regexp.MustCompile(re).MatchString(demo) {
			t.Errorf("make demo output does not match %s:\n%s", re, demo)
		}
	}
	if m := regexp.MustCompile(`Done in (\d+)s`).FindStringSubmatch(demo); m == nil {
		t.Errorf("make demo does not say how long it took:\n%s", demo)
	} else if n, _ := strconv.Atoi(m[1]); n >= 60 {
		t.Errorf("make demo took %ds after the build, want under a minute", n)
	}
	// The committed state is the last thing the demo shows before its
	// closing notes.
	if i, j := strings.LastIndex(demo, "greeted_hosts: 3"), strings.LastIndex(demo, "Done in"); i < 0 || i > j {
		t.Errorf("the state is not printed last:\n%s", demo)
	}

	url := devURL(t, filepath.Join(work, ".soulstack-dev"))
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	// curl as written, but an HTTP error fails the step.
	script.WriteString("curl() { command curl --fail-with-body \"$@\"; echo; }\n")
	for i, b := range tour {
		fmt.Fprintf(&script, "echo '### tour block %d'\n", i+1)
		script.WriteString(strings.ReplaceAll(b, "http://127.0.0.1:8080", url) + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began = time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README tour failed: %v\n%s", err, out.String())
	}
	t.Logf("tour: %s", time.Since(began))
	got := out.String()
	for _, want := range []string{
		"dev-soul-3", "(check mode: nothing changes)", "would change",
		"  wave 3: dev-soul-3", "Good evening (from dev-soul-2)",
		"simulated failure: the disk is full", "exit code 1", "error_locked", "unlocked: status ready",
		`"apply_id"`,
		"ok: service my-service", "Managed by Soul Stack — web",
		"PASS greet/one_host_per_wave",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the tour's output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("tour output:\n%s", got)
	}

	if stop := runMake("demo-stop"); !strings.Contains(stop, "stopped") {
		t.Errorf("make demo-stop:\n%s", stop)
	}
}

// devURL reads the keeper dev's address from its state file.
func devURL(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.URL == "" {
		t.Fatalf("dev.json: %v\n%s", err, b)
	}
	return st.URL
}

// cleanEnv is the environment without soulctl's and the keeper's
// variables, so the README runs as for a new user.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SOULCTL_") || strings.HasPrefix(kv, "SOULSTACK_") || strings.HasPrefix(kv, "SOUL_") ||
			strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// TestPackagingKeeperConfig: the example keeper configuration loads.
func TestPackagingKeeperConfig(t *testing.T) {
	cfg, err := config.Load(filepath.Join(repoRoot, "packaging", "keeper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != "/var/lib/soulstack/keeper" || cfg.Listen != ":8080" {
		t.Errorf("packaging/keeper.yaml: %+v", cfg)
	}
	for _, unit := range []string{"keeper.service", "soul.service"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, "packaging", unit))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "ExecStart=/usr/local/bin/") {
			t.Errorf("%s has no ExecStart", unit)
		}
	}
}
