package core

import (
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/soulstack/soulstack/internal/module"
)

// startGitHTTP serves the repositories under dir over smart HTTP on
// 127.0.0.1 with git http-backend (the server side only: go-git's own
// server cannot answer shallow fetches), and returns the base URL.
func startGitHTTP(t *testing.T, dir string) string {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs the git program to serve smart HTTP with git http-backend (the test's server; core.git itself does not use git)")
	}
	h := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGitHTTPDepth: over http, depth: 1 makes a shallow clone (older
// commits absent), which later runs update when the branch moves.
func TestGitHTTPDepth(t *testing.T) {
	f := newGitFixture(t)
	url := startGitHTTP(t, filepath.Dir(f.dir)) + "/src"
	dest := filepath.Join(t.TempDir(), "co")
	p := map[string]any{"repo": url, "dest": dest, "depth": 1}

	check := run(t, "core.git", p, &module.Env{Check: true})
	wantChanged(t, check, true)
	wantGitData(t, check, "", f.c2.String(), false)

	res := run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, "", f.c2.String(), false)
	if _, err := os.Stat(filepath.Join(dest, ".git", "shallow")); err != nil {
		t.Fatalf("no .git/shallow after depth: 1: %v", err)
	}
	repo, err := git.PlainOpen(dest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CommitObject(f.c1); err == nil {
		t.Fatalf("the parent commit %s was fetched despite depth: 1", f.c1)
	}
	wantChanged(t, run(t, "core.git", p, nil), false)

	c4 := f.commit(t, "a", "4\n", "four")
	res = run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, f.c2.String(), c4.String(), false)
	if got := readFile(t, filepath.Join(dest, "a")); got != "4\n" {
		t.Fatalf("a = %q", got)
	}

	// A full http clone has the whole history and the tags; check mode
	// peels an annotated tag from the remote's listing.
	full := filepath.Join(t.TempDir(), "full")
	check = run(t, "core.git", map[string]any{"repo": url, "dest": full, "version": "v2"}, &module.Env{Check: true})
	wantGitData(t, check, "", f.c2.String(), false)
	res = run(t, "core.git", map[string]any{"repo": url, "dest": full, "version": "v1"}, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, "", f.c1.String(), false)
	repo, err = git.PlainOpen(full)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Reference(plumbing.NewTagReferenceName("v2"), true); err != nil {
		t.Fatalf("tag v2 missing from a full clone: %v", err)
	}
}

// TestGitSubmodules: with recursive (the default) the submodules are
// cloned at the commit the superproject records; recursive: false leaves
// them empty.
func TestGitSubmodules(t *testing.T) {
	f := newGitFixture(t)
	base := filepath.Dir(f.dir)
	url := startGitHTTP(t, base)
	super, err := git.PlainInit(filepath.Join(base, "super"), false)
	if err != nil {
		t.Fatal(err)
	}
	gm := "[submodule \"lib\"]\n\tpath = lib\n\turl = " + url + "/src\n"
	if err := os.WriteFile(filepath.Join(base, "super", ".gitmodules"), []byte(gm), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := super.Worktree()
	if _, err := wt.Add(".gitmodules"); err != nil {
		t.Fatal(err)
	}
	idx, err := super.Storer.Index()
	if err != nil {
		t.Fatal(err)
	}
	e := idx.Add("lib")
	e.Hash, e.Mode = f.c1, filemode.Submodule
	if err := super.Storer.SetIndex(idx); err != nil {
		t.Fatal(err)
	}
	top, err := wt.Commit("with lib", &git.CommitOptions{Author: f.sig()})
	if err != nil {
		t.Fatal(err)
	}

	dest := filepath.Join(t.TempDir(), "co")
	res := run(t, "core.git", map[string]any{"repo": url + "/super", "dest": dest}, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, "", top.String(), false)
	if got := readFile(t, filepath.Join(dest, "lib", "a")); got != "1\n" {
		t.Fatalf("submodule file lib/a = %q, want the recorded commit's", got)
	}
	wantChanged(t, run(t, "core.git", map[string]any{"repo": url + "/super", "dest": dest}, nil), false)

	flat := filepath.Join(t.TempDir(), "co")
	run(t, "core.git", map[string]any{"repo": url + "/super", "dest": flat, "recursive": false}, nil)
	if _, err := os.Stat(filepath.Join(flat, "lib", "a")); !os.IsNotExist(err) {
		t.Fatalf("recursive: false cloned the submodule: %v", err)
	}
}
