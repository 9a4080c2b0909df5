package catalog_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/domain"
)

// TestSymlinksStayInTheTree: a service repository is content from outside
// the keeper's trust boundary. Its symlinks must not reach files of the
// keeper host, neither directly nor through a chain of links whose text
// looks local ("s/s/../../x" is "x" as text, but ".." after a link to "."
// climbs out of the tree).
func TestSymlinksStayInTheTree(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "keeper.yaml")
	if err := os.WriteFile(outside, []byte("database_url: postgres://keeper:hunter2@db/keeper\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	depth := strings.Count(filepath.ToSlash(outside), "/") + 8
	chained := strings.Repeat("s/", depth) + strings.Repeat("../", depth) + strings.TrimPrefix(filepath.ToSlash(outside), "/")

	for _, tc := range []struct {
		name  string
		links map[string]string // path in the repo → link target
	}{
		{"absolute", map[string]string{"essence/keeper.yaml": outside}},
		{"dot-dot", map[string]string{"essence/keeper.yaml": strings.Repeat("../", depth) + strings.TrimPrefix(outside, "/")}},
		{"through a link to itself", map[string]string{"essence/s": ".", "essence/keeper.yaml": chained}},
		{"directory through a link to itself", map[string]string{"s": ".", "essence": strings.Repeat("s/", depth) + strings.Repeat("../", depth) + strings.TrimPrefix(filepath.ToSlash(filepath.Dir(outside)), "/")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			repo := catalogtest.NewRepo(t)
			files := maps.Clone(catalogtest.MyService)
			if _, ok := tc.links["essence"]; ok {
				delete(files, "essence/_default.yaml")
			}
			repo.Commit(files, "v1")
			for name, target := range tc.links {
				p := filepath.Join(repo.Dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			}
			repo.Commit(nil, "links")

			c, st, _ := newCatalog(t)
			svc, err := c.Register(ctx, "my-service", repo.Dir, "master")
			if err == nil {
				c.Delete(ctx, "my-service")
				t.Fatalf("a repository with a symlink out of the tree was registered (commit %s)", svc.Commit)
			}
			wantCode(t, err, domain.CodeInvalid)
			if !strings.Contains(err.Error(), "outside the repository") {
				t.Errorf("error %q does not say the link leaves the repository", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the outside file: %v", err)
			}
			if _, err := st.GetService(ctx, "my-service"); domain.ErrorCode(err) != domain.CodeNotFound {
				t.Fatalf("the service was recorded: %v", err)
			}
		})
	}

	// Links that stay inside the tree are kept.
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "v1")
	for name, target := range map[string]string{"essence/s": ".", "essence/all.yaml": "s/s/_default.yaml", "docs": "scenario/create"} {
		if err := os.Symlink(target, filepath.Join(repo.Dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	commit := repo.Commit(nil, "inner links")
	c, _, dir := newCatalog(t)
	if _, err := c.Register(ctx, "inner", repo.Dir, "master"); err != nil {
		t.Fatalf("links inside the tree refused: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "inner", commit, "essence", "all.yaml")); err != nil || string(b) != catalogtest.MyService["essence/_default.yaml"] {
		t.Fatalf("inner link reads %q, %v", b, err)
	}
}

func TestSymlinkLoopRefused(t *testing.T) {
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "v1")
	if err := os.Symlink("loop", filepath.Join(repo.Dir, "loop")); err != nil {
		t.Fatal(err)
	}
	repo.Commit(nil, "loop")
	c, _, _ := newCatalog(t)
	_, err := c.Register(ctx, "looped", repo.Dir, "master")
	wantCode(t, err, domain.CodeInvalid)
	if !strings.Contains(err.Error(), "symlink loop points outside the repository or loops") {
		t.Errorf("error %q does not name the loop", err)
	}
}
