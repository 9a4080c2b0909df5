package catalog_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

func newBoundedCatalog(t *testing.T, maxBytes int64) (*catalog.Catalog, store.Store, string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir := filepath.Join(t.TempDir(), "services")
	c, err := catalog.New(catalog.Config{Dir: dir, Store: st, MaxTreeBytes: maxBytes, TreeGrace: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	return c, st, dir
}

func treesOf(t *testing.T, dir, name string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestL12TreeSizeCap reproduces audit finding L12's first half: a commit
// holding a large blob (git compresses zeros ~1000:1) is refused before
// it fills the disk, with the limit named, and leaves no directory.
func TestL12TreeSizeCap(t *testing.T) {
	repo := catalogtest.NewRepo(t)
	files := map[string]string{"files/blob.bin": strings.Repeat("\x00", 3<<20)}
	for k, v := range catalogtest.MyService {
		files[k] = v
	}
	repo.Commit(files, "a big blob")
	c, _, dir := newBoundedCatalog(t, 1<<20)
	_, err := c.Register(context.Background(), "bloat", repo.Dir, "master")
	if domain.ErrorCode(err) != domain.CodeUnprocessable || !strings.Contains(err.Error(), "services.max_tree_size") {
		t.Fatalf("register = %v, want unprocessable over services.max_tree_size", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bloat")); !os.IsNotExist(err) {
		t.Fatalf("the refused tree left %s behind (%v): %v", filepath.Join(dir, "bloat"), err, treesOf(t, dir, "bloat"))
	}
}

// TestL12UnusedTreesAreCollected reproduces L12's second half: every
// upgrade used to leave its tree forever. Trees that neither the service
// record nor an incarnation uses are removed once a new tree is
// materialized; a collected tree comes back when it is opened again.
func TestL12UnusedTreesAreCollected(t *testing.T) {
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	c1 := repo.Commit(catalogtest.MyService, "v1")
	c, st, dir := newBoundedCatalog(t, 0)
	if _, err := c.Register(ctx, "app", repo.Dir, "master"); err != nil {
		t.Fatal(err)
	}
	// An incarnation pins c1.
	if err := st.CreateIncarnation(ctx, store.Incarnation{Name: "app-prod", Service: "app", Ref: "master", Commit: c1, Covens: []string{}, Members: []string{}, CreatedAt: time.Now()},
		store.Run{ID: "r1", Scenario: "create", KeeperID: "k", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var commits []string
	for i := range 3 {
		commits = append(commits, repo.Commit(map[string]string{"essence/_default.yaml": "banner: v" + string(rune('2'+i)) + "\n"}, "next"))
		if _, err := c.Update(ctx, "app", "master", ""); err != nil {
			t.Fatal(err)
		}
	}
	// c1 (pinned), the service's commit and the one just before it (the
	// record still named it when the newest was materialized) remain.
	got := strings.Join(treesOf(t, dir, "app"), " ")
	for _, want := range []string{c1, commits[1], commits[2]} {
		if !strings.Contains(got, want) {
			t.Errorf("tree %s collected; trees: %s", want, got)
		}
	}
	if strings.Contains(got, commits[0]) {
		t.Errorf("unused tree %s kept; trees: %s", commits[0], got)
	}
	removed, err := c.Collect(ctx)
	if err != nil || len(removed) != 1 || removed[0] != "app/"+commits[1] {
		t.Fatalf("Collect = %v, %v, want app/%s", removed, err, commits[1])
	}
	// A collected tree is materialized again when it is needed.
	p, err := c.Path(ctx, "app", commits[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p, "essence", "_default.yaml")); err != nil {
		t.Fatal(err)
	}
}
