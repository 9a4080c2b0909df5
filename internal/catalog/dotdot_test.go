package catalog_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/domain"
)

// gitOut runs git in dir and returns its trimmed stdout.
func gitOut(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestI3DotDotTreeEntry: audit I3 — a crafted tree entry named ".." is
// refused as bad input (400, naming the entry), not an internal error,
// and nothing is written outside the service's tree.
func TestI3DotDotTreeEntry(t *testing.T) {
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "v1")
	blob := gitOut(t, repo.Dir, "pwned\n", "hash-object", "-w", "--stdin")
	sub := gitOut(t, repo.Dir, "100644 blob "+blob+"\tpasswd\n", "mktree")
	base := gitOut(t, repo.Dir, "", "rev-parse", "HEAD^{tree}")
	entries := gitOut(t, repo.Dir, "", "ls-tree", base)
	tree := gitOut(t, repo.Dir, entries+"\n040000 tree "+sub+"\t..\n", "mktree")
	commit := gitOut(t, repo.Dir, "evil", "commit-tree", tree, "-p", "HEAD")
	gitOut(t, repo.Dir, "", "update-ref", "refs/heads/master", commit)

	c, _, _ := newCatalog(t)
	_, err := c.Register(ctx, "my-service", repo.Dir, "master")
	if err == nil {
		t.Fatal("a repository with a '..' tree entry was registered")
	}
	if code := domain.ErrorCode(err); code != domain.CodeInvalid {
		t.Fatalf("'..' tree entry: code %s (%v), want invalid (a 400)", code, err)
	}
	if !strings.Contains(err.Error(), "..") {
		t.Errorf("the error does not name the entry: %v", err)
	}
}
