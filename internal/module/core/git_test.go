package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// gitData is the before/after/remote_url_changed of a core.git result.
func gitData(res domain.Result) map[string]any {
	return map[string]any{"before": res.Data["before"], "after": res.Data["after"], "remote_url_changed": res.Data["remote_url_changed"]}
}

func wantGitData(t *testing.T, res domain.Result, before, after string, urlChanged bool) {
	t.Helper()
	want := map[string]any{"before": before, "after": after, "remote_url_changed": urlChanged}
	if diff := cmp.Diff(want, gitData(res)); diff != "" {
		t.Fatalf("result data (-want +got):\n%s\nmsg: %s", diff, res.Msg)
	}
}

// TestGitCloneThenUnchanged: a clone (from a path and from a file://
// URL) is changed with before "" and after the remote HEAD's commit, on
// branch master; the second run and its check mode are unchanged.
func TestGitCloneThenUnchanged(t *testing.T) {
	f := newGitFixture(t)
	for _, repo := range []string{f.dir, "file://" + f.dir} {
		t.Run(repo[:4], func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "deep", "co")
			p := map[string]any{"repo": repo, "dest": dest}

			check := run(t, "core.git", p, &module.Env{Check: true})
			wantChanged(t, check, true)
			wantGitData(t, check, "", f.c2.String(), false)
			if !strings.Contains(check.Diff, "+ "+f.c2.String()) {
				t.Fatalf("check diff = %q", check.Diff)
			}
			if _, err := os.Lstat(filepath.Dir(dest)); !os.IsNotExist(err) {
				t.Fatalf("check mode created %s: %v", filepath.Dir(dest), err)
			}

			res := run(t, "core.git", p, nil)
			wantChanged(t, res, true)
			wantGitData(t, res, "", f.c2.String(), false)
			head, branch := checkoutState(t, dest)
			if head != f.c2.String() || branch != "master" {
				t.Fatalf("checkout at %s on %q, want %s on master", head, branch, f.c2)
			}
			if got := readFile(t, filepath.Join(dest, "a")); got != "2\n" {
				t.Fatalf("a = %q", got)
			}
			if got := remoteURL(t, dest, "origin"); got != repo {
				t.Fatalf("origin URL = %q, want %q", got, repo)
			}
			gitSnap := snap(t, filepath.Join(dest, ".git", "HEAD"))
			for _, env := range []*module.Env{nil, {Check: true}} {
				again := run(t, "core.git", p, env)
				wantChanged(t, again, false)
				wantGitData(t, again, f.c2.String(), f.c2.String(), false)
			}
			gitSnap.untouched(t, filepath.Join(dest, ".git", "HEAD"))
		})
	}
}

// TestGitVersions clones each kind of version: tags (lightweight and
// annotated, peeled to the commit), a branch, full and short SHAs, a full
// ref name; each is unchanged on the second run and in check mode.
func TestGitVersions(t *testing.T) {
	f := newGitFixture(t)
	cases := []struct {
		version, want, branch string
	}{
		{"HEAD", f.c2.String(), "master"},
		{"v1", f.c1.String(), ""},
		{"v2", f.c2.String(), ""},
		{"dev", f.c3.String(), "dev"},
		{"refs/heads/dev", f.c3.String(), "dev"},
		{f.c1.String(), f.c1.String(), ""},
		{f.c3.String()[:7], f.c3.String(), ""},
	}
	for _, c := range cases {
		t.Run(c.version, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "co")
			p := map[string]any{"repo": f.dir, "dest": dest, "version": c.version}
			res := run(t, "core.git", p, nil)
			wantChanged(t, res, true)
			wantGitData(t, res, "", c.want, false)
			head, branch := checkoutState(t, dest)
			if head != c.want || branch != c.branch {
				t.Fatalf("checkout at %s on %q, want %s on %q", head, branch, c.want, c.branch)
			}
			for _, env := range []*module.Env{nil, {Check: true}} {
				again := run(t, "core.git", p, env)
				wantChanged(t, again, false)
				wantGitData(t, again, c.want, c.want, false)
			}
		})
	}
}

// TestGitUpdateFollowsRemote: when the remote's branch moves, check mode
// reports the move (from ls-remote) and changes nothing; the real run moves
// the checkout; switching to a tag detaches HEAD and HEAD brings it back.
func TestGitUpdateFollowsRemote(t *testing.T) {
	f := newGitFixture(t)
	dest := filepath.Join(t.TempDir(), "co")
	p := map[string]any{"repo": f.dir, "dest": dest}
	run(t, "core.git", p, nil)
	c4 := f.commit(t, "a", "4\n", "four")

	check := run(t, "core.git", p, &module.Env{Check: true})
	wantChanged(t, check, true)
	wantGitData(t, check, f.c2.String(), c4.String(), false)
	if want := shaDiff(f.c2.String(), c4.String()); check.Diff != want {
		t.Fatalf("check diff = %q, want %q", check.Diff, want)
	}
	if got := readFile(t, filepath.Join(dest, "a")); got != "2\n" {
		t.Fatalf("check mode changed a to %q", got)
	}

	res := run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, f.c2.String(), c4.String(), false)
	if got := readFile(t, filepath.Join(dest, "a")); got != "4\n" {
		t.Fatalf("a = %q after the update", got)
	}
	wantChanged(t, run(t, "core.git", p, nil), false)

	p["version"] = "v1"
	res = run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, c4.String(), f.c1.String(), false)
	if head, branch := checkoutState(t, dest); head != f.c1.String() || branch != "" {
		t.Fatalf("after version v1: %s on %q", head, branch)
	}
	p["version"] = "HEAD"
	res = run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	if head, branch := checkoutState(t, dest); head != c4.String() || branch != "master" {
		t.Fatalf("after version HEAD: %s on %q, want %s on master", head, branch, c4)
	}
}

// TestGitNewTagOnSameCommit: a tag added later on the checked-out commit
// is fetched and the task is unchanged (Ansible's checkout-new-tag).
func TestGitNewTagOnSameCommit(t *testing.T) {
	f := newGitFixture(t)
	dest := filepath.Join(t.TempDir(), "co")
	run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest}, nil)
	if _, err := f.repo.CreateTag("newtag", f.c2, nil); err != nil {
		t.Fatal(err)
	}
	res := run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest, "version": "newtag"}, nil)
	wantChanged(t, res, false)
	wantGitData(t, res, f.c2.String(), f.c2.String(), false)
	if _, err := os.Stat(filepath.Join(dest, ".git", "refs", "tags", "newtag")); err != nil {
		t.Fatalf("tag newtag was not fetched: %v", err)
	}
}

// TestGitLocalModifications: modified tracked files make the task fail
// without force (in check mode too); with force they are discarded
// (changed), untracked files are kept.
func TestGitLocalModifications(t *testing.T) {
	f := newGitFixture(t)
	dest := filepath.Join(t.TempDir(), "co")
	p := map[string]any{"repo": f.dir, "dest": dest}
	run(t, "core.git", p, nil)
	if err := os.WriteFile(filepath.Join(dest, "untracked"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantChanged(t, run(t, "core.git", p, nil), false) // untracked files are no modification
	if err := os.WriteFile(filepath.Join(dest, "a"), []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range []*module.Env{nil, {Check: true}} {
		_, err := runErr(t, "core.git", p, env)
		wantErrContains(t, err, "local modifications", dest, "force")
	}
	if got := readFile(t, filepath.Join(dest, "a")); got != "3\n" {
		t.Fatalf("a = %q, the failed run touched it", got)
	}

	p["force"] = true
	check := run(t, "core.git", p, &module.Env{Check: true})
	wantChanged(t, check, true)
	wantGitData(t, check, f.c2.String(), f.c2.String(), false)
	if got := readFile(t, filepath.Join(dest, "a")); got != "3\n" {
		t.Fatalf("check mode changed a to %q", got)
	}
	res := run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	if got := readFile(t, filepath.Join(dest, "a")); got != "2\n" {
		t.Fatalf("force did not discard the modification: a = %q", got)
	}
	if got := readFile(t, filepath.Join(dest, "untracked")); got != "mine\n" {
		t.Fatalf("untracked file = %q", got)
	}
	wantChanged(t, run(t, "core.git", p, nil), false)

	// force over a dirty tree while the remote moved: both happen.
	if err := os.WriteFile(filepath.Join(dest, "a"), []byte("local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c4 := f.commit(t, "a", "4\n", "four")
	res = run(t, "core.git", p, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, f.c2.String(), c4.String(), false)
	if got := readFile(t, filepath.Join(dest, "a")); got != "4\n" {
		t.Fatalf("a = %q", got)
	}
}

// TestGitUpdateAndCloneFalse: update: false leaves an existing checkout
// where it is; clone: false never creates dest, reporting the remote's
// commit (also without dest).
func TestGitUpdateAndCloneFalse(t *testing.T) {
	f := newGitFixture(t)
	dest := filepath.Join(t.TempDir(), "co")
	run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest, "version": "v1"}, nil)
	f.commit(t, "a", "4\n", "four")
	for _, env := range []*module.Env{nil, {Check: true}} {
		res := run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest, "version": "master", "update": false}, env)
		wantChanged(t, res, false)
		wantGitData(t, res, f.c1.String(), f.c1.String(), false)
	}
	if head, _ := checkoutState(t, dest); head != f.c1.String() {
		t.Fatalf("update: false moved the checkout to %s", head)
	}

	absent := filepath.Join(t.TempDir(), "absent")
	for _, p := range []map[string]any{
		{"repo": f.dir, "dest": absent, "clone": false, "version": "dev"},
		{"repo": f.dir, "clone": false, "update": false, "version": "dev"},
	} {
		res := run(t, "core.git", p, nil)
		wantChanged(t, res, false)
		wantGitData(t, res, "", f.c3.String(), false)
	}
	if _, err := os.Lstat(absent); !os.IsNotExist(err) {
		t.Fatalf("clone: false created %s", absent)
	}
}

// TestGitChangeRepoURL: a new repo URL for an existing checkout is set on
// the remote and reported (changed, remote_url_changed), in check mode too
// without writing it.
func TestGitChangeRepoURL(t *testing.T) {
	f := newGitFixture(t)
	dest := filepath.Join(t.TempDir(), "co")
	run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest}, nil)
	other := "file://" + f.dir
	check := run(t, "core.git", map[string]any{"repo": other, "dest": dest}, &module.Env{Check: true})
	wantChanged(t, check, true)
	wantGitData(t, check, f.c2.String(), f.c2.String(), true)
	if got := remoteURL(t, dest, "origin"); got != f.dir {
		t.Fatalf("check mode changed the remote URL to %q", got)
	}
	res := run(t, "core.git", map[string]any{"repo": other, "dest": dest}, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, f.c2.String(), f.c2.String(), true)
	if got := remoteURL(t, dest, "origin"); got != other {
		t.Fatalf("remote URL = %q, want %q", got, other)
	}
	wantChanged(t, run(t, "core.git", map[string]any{"repo": other, "dest": dest}, nil), false)

	// remote: another name is added beside origin.
	res = run(t, "core.git", map[string]any{"repo": f.dir, "dest": dest, "remote": "upstream", "version": "dev"}, nil)
	wantChanged(t, res, true)
	wantGitData(t, res, f.c2.String(), f.c3.String(), true)
	if got := remoteURL(t, dest, "upstream"); got != f.dir {
		t.Fatalf("upstream URL = %q", got)
	}
}
