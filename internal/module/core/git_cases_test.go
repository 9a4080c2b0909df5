package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/soulstack/soulstack/internal/module"
)

// TestGitBadInput: each mistake fails with an error naming the param or
// the problem, and a failed clone leaves no dest behind.
func TestGitBadInput(t *testing.T) {
	f := newGitFixture(t)
	base := t.TempDir()
	notRepo := filepath.Join(base, "notrepo")
	if err := os.MkdirAll(notRepo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notRepo, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plainDir := t.TempDir()
	cases := []struct {
		name   string
		params map[string]any
		env    *module.Env
		want   []string
	}{
		{"missing repo path", map[string]any{"repo": filepath.Join(base, "missing"), "dest": filepath.Join(base, "d1")}, nil, []string{"missing"}},
		{"not a repository", map[string]any{"repo": plainDir, "dest": filepath.Join(base, "d2")}, nil, []string{"repository not found"}},
		{"bad version", map[string]any{"repo": f.dir, "dest": filepath.Join(base, "d3"), "version": "nope"}, nil, []string{`version "nope"`, "not a branch, tag or commit"}},
		{"bad version check", map[string]any{"repo": f.dir, "dest": filepath.Join(base, "d3"), "version": "nope"}, &module.Env{Check: true}, []string{`version "nope"`}},
		{"unknown sha", map[string]any{"repo": f.dir, "dest": filepath.Join(base, "d4"), "version": "deadbeef"}, nil, []string{`version "deadbeef"`, "not a commit"}},
		{"dest not a checkout", map[string]any{"repo": f.dir, "dest": notRepo}, nil, []string{"dest", "not a git checkout"}},
		{"dest relative", map[string]any{"repo": f.dir, "dest": "co"}, nil, []string{"dest", "absolute"}},
		{"dest required", map[string]any{"repo": f.dir}, nil, []string{`"dest" is required unless clone: false`}},
		{"relative repo", map[string]any{"repo": "src", "dest": filepath.Join(base, "d5")}, nil, []string{"repo", "absolute path"}},
		{"scheme", map[string]any{"repo": "ftp://example.com/x.git", "dest": filepath.Join(base, "d6")}, nil, []string{"repo", `"ftp"`}},
		{"depth", map[string]any{"repo": f.dir, "dest": filepath.Join(base, "d7"), "depth": 0}, nil, []string{"depth", "positive"}},
		{"ssh_opts", map[string]any{"repo": f.dir, "dest": filepath.Join(base, "d8"), "ssh_opts": "-o ProxyCommand=nc"}, nil, []string{"ssh_opts", "ProxyCommand"}},
		{"unknown param", map[string]any{"repo": f.dir, "dest": filepath.Join(base, "d9"), "umask": "022"}, nil, []string{"umask"}},
		{"keeper", map[string]any{"repo": f.dir, "dest": filepath.Join(base, "d10")}, &module.Env{InKeeper: true}, []string{"inside the Keeper"}},
		{"bad refspec", map[string]any{"repo": f.dir, "dest": filepath.Join(base, "d11"), "refspec": "refs/a/*:refs/b"}, nil, []string{"refspec"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runErr(t, "core.git", c.params, c.env)
			wantErrContains(t, err, c.want...)
			if d, ok := c.params["dest"].(string); ok && filepath.IsAbs(d) && d != notRepo {
				if _, err := os.Lstat(d); !os.IsNotExist(err) {
					t.Fatalf("a failed call left %s behind (%v)", d, err)
				}
			}
		})
	}
}

// TestGitBare: a bare clone holds every branch and tag, with HEAD on the
// remote's default branch; it follows the remote on update.
func TestGitBare(t *testing.T) {
	f := newGitFixture(t)
	dest := filepath.Join(t.TempDir(), "repo.git")
	p := map[string]any{"repo": f.dir, "dest": dest, "bare": true}
	res := run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, "", f.c2.String(), false)
	repo, err := git.PlainOpen(dest)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[plumbing.ReferenceName]plumbing.Hash{
		"refs/heads/master": f.c2, "refs/heads/dev": f.c3, "refs/tags/v1": f.c1,
	} {
		ref, err := repo.Reference(name, true)
		if err != nil || ref.Hash() != want {
			t.Fatalf("%s = %v (%v), want %s", name, ref, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "a")); !os.IsNotExist(err) {
		t.Fatalf("a bare clone has a working tree file: %v", err)
	}
	wantChanged(t, run(t, "core.git", p, nil), false)
	c4 := f.commit(t, "a", "4\n", "four")
	wantChanged(t, run(t, "core.git", p, &module.Env{Check: true}), true)
	res = run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, f.c2.String(), c4.String(), false)

	_, err = runErr(t, "core.git", map[string]any{"repo": f.dir, "dest": dest}, nil)
	wantErrContains(t, err, "bare repository", "bare: true")
}

// TestGitSingleBranchAndRefspec: single_branch fetches only the branch
// asked for; a commit reachable only from another ref is found with
// refspec, and not without.
func TestGitSingleBranchAndRefspec(t *testing.T) {
	f := newGitFixture(t)
	dest := filepath.Join(t.TempDir(), "co")
	run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest, "version": "dev", "single_branch": true}, nil)
	repo, err := git.PlainOpen(dest)
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := repo.References()
	var names []string
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name().IsRemote() || r.Name().IsTag() {
			names = append(names, r.Name().String())
		}
		return nil
	})
	if len(names) != 1 || names[0] != "refs/remotes/origin/dev" {
		t.Fatalf("single_branch fetched %v, want only refs/remotes/origin/dev", names)
	}

	// A commit on refs/pull/1/head only.
	commit := &object.Commit{Author: *f.sig(), Committer: *f.sig(), Message: "pr", TreeHash: mustTree(t, f.repo, f.c2), ParentHashes: []plumbing.Hash{f.c2}}
	obj := f.repo.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		t.Fatal(err)
	}
	pr, err := f.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.repo.Storer.SetReference(plumbing.NewHashReference("refs/pull/1/head", pr)); err != nil {
		t.Fatal(err)
	}
	dest2 := filepath.Join(t.TempDir(), "co")
	_, err = runErr(t, "core.git", map[string]any{"repo": f.dir, "dest": dest2, "version": pr.String()}, nil)
	wantErrContains(t, err, "not a commit")
	res := run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest2, "version": pr.String(), "refspec": "refs/pull/1/head"}, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, "", pr.String(), false)
}

func mustTree(t *testing.T, repo *git.Repository, h plumbing.Hash) plumbing.Hash {
	t.Helper()
	c, err := repo.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	return c.TreeHash
}

// TestGitConfined: under --root, dest and a local repo path resolve inside
// the root.
func TestGitConfined(t *testing.T) {
	root := t.TempDir()
	f := newGitFixture(t)
	if err := os.Rename(f.dir, filepath.Join(root, "src")); err != nil {
		t.Fatal(err)
	}
	env := &module.Env{Root: root}
	res := run(t, "core.git", map[string]any{"repo": "/src", "dest": "/srv/app"}, env)
	wantChanged(t, res, true)
	wantGitData(t, res, "", f.c2.String(), false)
	if got := readFile(t, filepath.Join(root, "srv", "app", "a")); got != "2\n" {
		t.Fatalf("a = %q", got)
	}
	_, err := runErr(t, "core.git", map[string]any{"repo": "/src", "dest": "/../escape"}, env)
	wantErrContains(t, err, "dest")
}

// TestGitUnsafeDest: a dest reached through a symlink a user planted in
// their own directory, pointing at a root-owned directory, is refused
// before anything is written.
func TestGitUnsafeDest(t *testing.T) {
	needRoot(t)
	f := newGitFixture(t)
	base := t.TempDir()
	userDir := filepath.Join(base, "home")
	target := filepath.Join(base, "rootonly")
	for _, d := range []string{userDir, target} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(userDir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(userDir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, err := runErr(t, "core.git", map[string]any{"repo": f.dir, "dest": filepath.Join(link, "co")}, nil)
	wantErrContains(t, err, "dest", "unsafe")
	if _, err := os.Lstat(filepath.Join(target, "co")); !os.IsNotExist(err) {
		t.Fatalf("the clone went through the planted symlink: %v", err)
	}
}

// TestGitSchemaChecks: literal values a scenario's validation refuses
// before anything runs (the Check funcs of the schema).
func TestGitSchemaChecks(t *testing.T) {
	m, _ := module.Lookup("core.git")
	params := m.Schema().Params
	cases := []struct {
		param, value string
		ok           bool
	}{
		{"repo", "https://example.com/a.git", true},
		{"repo", "git@example.com:org/a.git", true},
		{"repo", "ssh://git@example.com:2222/a.git", true},
		{"repo", "file:///srv/a", true},
		{"repo", "/srv/a", true},
		{"repo", "srv/a", false},
		{"repo", "ftp://example.com/a", false},
		{"dest", "/srv/app", true},
		{"dest", "app", false},
		{"key_file", "~/.ssh/id", false},
		{"refspec", "refs/pull/1/head", true},
		{"refspec", "refs/heads/*:refs/x", false},
		{"ssh_opts", "-o StrictHostKeyChecking=no -i /k", true},
		{"ssh_opts", "-p 2222", false},
		{"ssh_opts", "-o StrictHostKeyChecking=maybe", false},
	}
	for _, c := range cases {
		t.Run(c.param+"="+c.value, func(t *testing.T) {
			err := params[c.param].Check(c.value)
			if (err == nil) != c.ok {
				t.Fatalf("Check(%q) = %v, want ok %v", c.value, err, c.ok)
			}
		})
	}
}

// TestGitMovedTag: a tag moved (force-pushed) on the remote is fetched
// again and the checkout follows it (Ansible's forcefully-fetch-tag).
func TestGitMovedTag(t *testing.T) {
	f := newGitFixture(t)
	if _, err := f.repo.CreateTag("herewego", f.c1, nil); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "co")
	p := map[string]any{"repo": f.dir, "dest": dest, "version": "herewego"}
	wantGitData(t, run(t, "core.git", p, nil), "", f.c1.String(), false)
	if err := f.repo.DeleteTag("herewego"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.repo.CreateTag("herewego", f.c2, nil); err != nil {
		t.Fatal(err)
	}
	res := run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, f.c1.String(), f.c2.String(), false)
}

// TestGitSingleBranchTag: single_branch with a tag fetches that tag and
// no branch.
func TestGitSingleBranchTag(t *testing.T) {
	f := newGitFixture(t)
	dest := filepath.Join(t.TempDir(), "co")
	res := run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest, "version": "v2", "single_branch": true}, nil)
	wantGitData(t, res, "", f.c2.String(), false)
	repo, err := git.PlainOpen(dest)
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := repo.References()
	var names []string
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name().IsRemote() || r.Name().IsTag() {
			names = append(names, r.Name().String())
		}
		return nil
	})
	if len(names) != 1 || names[0] != "refs/tags/v2" {
		t.Fatalf("fetched %v, want only refs/tags/v2", names)
	}
}

// TestGitRedactsPassword: a password in the repo URL never reaches an
// error or a message.
func TestGitRedactsPassword(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "co")
	_, err := runErr(t, "core.git", map[string]any{"repo": "http://deploy:s3cret-token@127.0.0.1:1/app.git", "dest": dest}, nil)
	if err == nil || strings.Contains(err.Error(), "s3cret-token") {
		t.Fatalf("error = %v, want one without the password", err)
	}
	res, err := runErr(t, "core.git", map[string]any{"repo": "http://deploy:s3cret-token@127.0.0.1:1/app.git", "clone": false}, nil)
	if err == nil || strings.Contains(err.Error(), "s3cret-token") || strings.Contains(res.Msg, "s3cret-token") {
		t.Fatalf("clone: false: %v / %q", err, res.Msg)
	}
}
