package install_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/version"
)

// scripts/version.sh follows the release tag: the tag itself on the
// tagged commit (and a soul built there says so in --version),
// tag-N-gSHA after it, -dirty with changes, and "untagged" without a tag.
func TestVersionScriptFollowsTag(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed (scripts/test-deps.sh installs it)")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "scripts", "version.sh")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(repoDir, "scripts", "version.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, b, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		return run(t, dir, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	}
	ver := func() string { return run(t, dir, "sh", script) }
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "one")
	if v := ver(); !regexp.MustCompile(`^v0\.0\.0-untagged-[0-9a-f]{12}$`).MatchString(v) {
		t.Fatalf("untagged tree: version %q", v)
	}
	git("tag", "-a", "v1.2.3", "-m", "release")
	if v := ver(); v != "v1.2.3" {
		t.Fatalf("tagged commit: version %q, want v1.2.3", v)
	}
	// A soul built from the tagged commit as make dist builds it (static,
	// -trimpath, that tree's ldflags) says the tag.
	tagged := git("rev-parse", "HEAD")
	soul := filepath.Join(t.TempDir(), "soul")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w "+run(t, dir, "sh", script, "ldflags"), "-o", soul, "./cmd/soul")
	build.Dir, build.Env = repoDir, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the soul: %v\n%s", err, out)
	}
	if out, want := run(t, "", soul, "--version"), "soul v1.2.3 (commit "+tagged[:12]+", "; !strings.HasPrefix(out, want) {
		t.Fatalf("soul built at tag v1.2.3: --version = %q, want it to start with %q", out, want)
	}
	if err := os.WriteFile(script, append(b, '\n'), 0o755); err != nil {
		t.Fatal(err)
	}
	if v := ver(); v != "v1.2.3-dirty" {
		t.Fatalf("tagged and changed: version %q, want v1.2.3-dirty", v)
	}
	git("commit", "-qam", "two")
	if v := ver(); !regexp.MustCompile(`^v1\.2\.3-1-g[0-9a-f]{12}$`).MatchString(v) {
		t.Fatalf("one commit after the tag: version %q", v)
	}
	if _, ok := version.Parse(ver()); !ok {
		t.Fatalf("the keeper cannot parse %q", ver())
	}
	commit := git("rev-parse", "HEAD")
	if c := run(t, dir, "sh", script, "commit"); c != commit {
		t.Fatalf("commit = %q, want %q", c, commit)
	}
	if ld := run(t, dir, "sh", script, "ldflags"); !strings.Contains(ld, "internal/version.version="+ver()) || !strings.Contains(ld, "internal/version.commit="+commit) {
		t.Fatalf("ldflags = %q", ld)
	}
}

// keeper --version, soul --version and soulctl --version print what
// scripts/version.sh says for this checkout (the binaries are built with
// its ldflags, as make build and make dist build them).
func TestBinariesReportVersion(t *testing.T) {
	want, commit := builtVersion, builtCommit
	for _, name := range []string{"keeper", "soul", "soulctl"} {
		out := run(t, "", bins[name], "--version")
		prefix := name + " " + want + " (commit " + commit[:min(12, len(commit))]
		if !strings.HasPrefix(out, prefix) {
			t.Errorf("%s --version = %q, want it to start with %q", name, out, prefix)
		}
	}
}
