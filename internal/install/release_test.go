package install_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// scripts/release.sh --dry-run, in a clone whose CHANGELOG.md names a
// release 9.9.9: it builds the packages with the version stamped in,
// writes a SHA256SUMS that verifies and lists every artifact, and release
// notes made of the release's CHANGELOG.md section, and tags nothing. A
// real run refuses a version without notes, a malformed one, and a tree
// with uncommitted changes, before building anything.
func TestReleaseDryRun(t *testing.T) {
	for _, tool := range []string{"git", "make", "sha256sum", "tar", "gzip", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed", tool)
		}
	}
	clone := filepath.Join(t.TempDir(), "clone")
	run(t, "", "git", "clone", "-q", repoDir, clone)
	git := func(args ...string) string {
		return run(t, clone, "git", append([]string{"-c", "user.name=Release Test", "-c", "user.email=release@example.org"}, args...)...)
	}
	cl := filepath.Join(clone, "CHANGELOG.md")
	text := readFile(t, cl)
	if !strings.Contains(text, "\n## [Unreleased]\n") {
		t.Fatal("CHANGELOG.md has no [Unreleased] section")
	}
	// The notes of 9.9.9 are what is unreleased now.
	text = strings.Replace(text, "\n## [Unreleased]\n", "\n## [Unreleased]\n\n## [9.9.9] - 2026-12-06\n", 1)
	if err := os.WriteFile(cl, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-q", "-am", "release 9.9.9")
	var firstNote string
	for _, l := range strings.Split(text[strings.Index(text, "## [9.9.9]"):], "\n")[1:] {
		if strings.HasPrefix(l, "- ") {
			firstNote = l
			break
		}
	}
	if firstNote == "" {
		t.Fatal("the [Unreleased] section has no notes to release")
	}

	release := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"scripts/release.sh"}, args...)...)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "ARCHES="+runtime.GOARCH, "DIST="+filepath.Join(clone, "out"))
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	for _, bad := range []struct{ arg, want string }{
		{"9.9.8", "no notes"},
		{"nine", "not a semantic version"},
	} {
		if out, err := release(bad.arg); err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("release.sh %s: %v, want an error saying %q:\n%s", bad.arg, err, bad.want, out)
		}
	}
	if err := os.WriteFile(filepath.Join(clone, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := release("9.9.9"); err == nil || !strings.Contains(out, "uncommitted") {
		t.Errorf("release.sh on a dirty tree: %v\n%s", err, out)
	}
	git("checkout", "-q", "README.md")

	start := time.Now()
	out, err := release("--dry-run", "v9.9.9")
	if err != nil {
		t.Fatalf("release.sh --dry-run: %v\n%s", err, out)
	}
	t.Logf("release.sh --dry-run in %v", time.Since(start).Round(time.Second))
	if !strings.Contains(out, "would tag") {
		t.Errorf("dry run does not say what it would tag:\n%s", out)
	}
	if tags := git("tag", "-l", "v9.9.9"); tags != "" {
		t.Errorf("the dry run tagged %q", tags)
	}
	dist := filepath.Join(clone, "out")
	sums := readFile(t, filepath.Join(dist, "SHA256SUMS"))
	arch := runtime.GOARCH
	for _, want := range []string{"soulstack-v9.9.9-linux-" + arch + ".tar.gz", "soul-linux-" + arch,
		"soulstack-soul_9.9.9-1_" + arch + ".deb", "soulstack-keeper_9.9.9-1_" + arch + ".deb", "soulctl_9.9.9-1_" + arch + ".deb"} {
		if !strings.Contains(sums, "  "+want+"\n") {
			t.Errorf("SHA256SUMS lacks %s:\n%s", want, sums)
		}
	}
	if n := strings.Count(sums, ".rpm\n"); n != 3 {
		t.Errorf("SHA256SUMS lists %d .rpm, want 3:\n%s", n, sums)
	}
	run(t, dist, "sha256sum", "--strict", "-c", "SHA256SUMS")
	if v := run(t, "", filepath.Join(dist, "linux-"+arch, "soulctl"), "--version"); !strings.Contains(v, "v9.9.9") {
		t.Errorf("soulctl --version = %q, want v9.9.9", v)
	}
	listing := run(t, "", "tar", "-tzf", filepath.Join(dist, "soulstack-v9.9.9-linux-"+arch+".tar.gz")) + "\n"
	for _, f := range []string{"keeper", "soul", "soulctl", "LICENSE", "CHANGELOG.md"} {
		if !strings.Contains(listing, "soulstack-v9.9.9-linux-"+arch+"/"+f+"\n") {
			t.Errorf("tarball lacks %s:\n%s", f, listing)
		}
	}
	notes := readFile(t, filepath.Join(dist, "RELEASE_NOTES.md"))
	if !strings.HasPrefix(notes, "# Soul Stack v9.9.9 (2026-12-06)\n") || !strings.Contains(notes, firstNote) || strings.Contains(notes, "## [0.4.0]") {
		t.Errorf("RELEASE_NOTES.md is not the 9.9.9 section (want %q in it):\n%s", firstNote, notes)
	}
}
