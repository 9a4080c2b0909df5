package modules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// makeGitRepo makes a repository with two commits (tag v1 on the first)
// with go-git in a temp dir and returns its path and the two commits.
func makeGitRepo(t *testing.T) (dir, c1, c2 string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "src")
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for i, content := range []string{"one\n", "two\n"} {
		if err := os.WriteFile(filepath.Join(dir, "a"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add("a"); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "T", Email: "t@example.com", When: time.Date(2024, 1, 1, i, 0, 0, 0, time.UTC)}
		h, err := wt.Commit(content, &git.CommitOptions{Author: sig})
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h.String())
		if i == 0 {
			if _, err := repo.CreateTag("v1", h, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir, hashes[0], hashes[1]
}

// TestGitOnLabHost clones a repository copied onto the lab host with the
// real soul: check mode shows the move and touches nothing, the clone is
// changed, a second run is not, a version change moves the checkout, and
// a relative dest is refused when the destiny loads. It says whether the
// host has a git program: core.git must not need one.
func TestGitOnLabHost(t *testing.T) {
	h := host(t)
	src, c1, c2 := makeGitRepo(t)
	sh(t, h, "rm -rf /srv/gitsrc /srv/gitco")
	t.Cleanup(func() { sh(t, h, "rm -rf /srv/gitsrc /srv/gitco /tmp/gitlab") })
	copyRepo(t, h, src, "/srv/gitsrc")
	t.Logf("git on the lab host: %s", strings.TrimSpace(sh(t, h, "command -v git || echo none")))

	converge(t, h, "/tmp/gitlab", "{name: t, module: core.git, params: {repo: /srv/gitsrc, dest: /srv/gitco}}", "/srv/gitco/a")
	if got := sh(t, h, "cat /srv/gitco/a"); got != "two\n" {
		t.Fatalf("a = %q", got)
	}
	if got := strings.TrimSpace(sh(t, h, "cat /srv/gitco/.git/HEAD")); got != "ref: refs/heads/master" {
		t.Fatalf("HEAD = %q", got)
	}
	r := apply(t, h, "/tmp/gitlab", "  - {name: t, module: core.git, params: {repo: /srv/gitsrc, dest: /srv/gitco, version: v1}}\n", true)
	if r.Failed || !r.Changed || !strings.Contains(r.Diff, c1) || !strings.Contains(r.Diff, c2) {
		t.Fatalf("check mode to v1: %+v", r)
	}
	r = apply(t, h, "/tmp/gitlab", "  - {name: t, module: core.git, params: {repo: /srv/gitsrc, dest: /srv/gitco, version: v1}}\n", false)
	if r.Failed || !r.Changed {
		t.Fatalf("to v1: %+v", r)
	}
	if got := sh(t, h, "cat /srv/gitco/a"); got != "one\n" {
		t.Fatalf("a = %q at v1", got)
	}
	wantRefused(t, h, "/tmp/gitlab", "{name: t, module: core.git, params: {repo: /srv/gitsrc, dest: gitco}}", "core.git", "dest")
}
