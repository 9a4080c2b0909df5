package core

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitFixture is a source repository made with go-git in a temp dir:
//
//	master: c1 (a=1, lightweight tag v1) ── c2 (a=2, annotated tag v2)
//	dev:                                     └─ c3 (b=dev)
type gitFixture struct {
	dir  string
	repo *git.Repository
	c1   plumbing.Hash
	c2   plumbing.Hash
	c3   plumbing.Hash
	when time.Time
}

func newGitFixture(t *testing.T) *gitFixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	f := &gitFixture{dir: dir, repo: repo, when: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	f.c1 = f.commit(t, "a", "1\n", "one")
	if _, err := repo.CreateTag("v1", f.c1, nil); err != nil {
		t.Fatal(err)
	}
	f.c2 = f.commit(t, "a", "2\n", "two")
	if _, err := repo.CreateTag("v2", f.c2, &git.CreateTagOptions{Tagger: f.sig(), Message: "release 2"}); err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("dev"), Create: true}); err != nil {
		t.Fatal(err)
	}
	f.c3 = f.commit(t, "b", "dev\n", "three")
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.Master}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *gitFixture) sig() *object.Signature {
	f.when = f.when.Add(time.Minute)
	return &object.Signature{Name: "Test", Email: "test@example.com", When: f.when}
}

// commit writes file with content on the current branch and commits it.
func (f *gitFixture) commit(t *testing.T, file, content, msg string) plumbing.Hash {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := f.repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add(file); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: f.sig()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// checkoutState reads what the checkout at dir has: HEAD's commit and the
// branch it is on ("" when detached).
func checkoutState(t *testing.T, dir string) (head, branch string) {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatalf("opening the checkout %s: %v", dir, err)
	}
	ref, err := repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Type() == plumbing.SymbolicReference {
		branch = ref.Target().Short()
	}
	h, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	return h.Hash().String(), branch
}

// remoteURL is the URL of remote name in the checkout at dir.
func remoteURL(t *testing.T, dir, name string) string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := repo.Config()
	if err != nil {
		t.Fatal(err)
	}
	rc, ok := cfg.Remotes[name]
	if !ok {
		return ""
	}
	return rc.URLs[0]
}
