package catalog_test

import (
	"context"
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/domain"
	_ "github.com/soulstack/soulstack/internal/module/core" // modules the DSL validates against
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

func newCatalog(t *testing.T) (*catalog.Catalog, store.Store, string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir := filepath.Join(t.TempDir(), "services")
	c, err := catalog.New(catalog.Config{Dir: dir, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return c, st, dir
}

func wantCode(t *testing.T, err error, want domain.Code) {
	t.Helper()
	if err == nil || domain.ErrorCode(err) != want {
		t.Fatalf("error %v: code %s, want %s", err, domain.ErrorCode(err), want)
	}
}

func TestRegisterResolvesRefs(t *testing.T) {
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	c1 := repo.Commit(catalogtest.MyService, "v1")
	repo.Tag("v1.0.0")
	repo.AnnotatedTag("v1.0.0-annotated")
	c2 := repo.Commit(map[string]string{"essence/_default.yaml": "banner: two\n"}, "v2")
	repo.Branch("dev")

	c, _, _ := newCatalog(t)
	for i, tc := range []struct {
		git, ref, want string
	}{
		{repo.Dir, "v1.0.0", c1},
		{"file://" + repo.Dir, "v1.0.0-annotated", c1},
		{repo.Dir, "master", c2},
		{repo.Dir, "dev", c2},
		{repo.Dir, c1, c1},
		{repo.Dir, c1[:8], c1},
		{repo.Dir, "HEAD", c2},
	} {
		name := "svc" + string(rune('a'+i))
		svc, err := c.Register(ctx, name, tc.git, tc.ref)
		if err != nil {
			t.Fatalf("Register(%s, %s): %v", tc.git, tc.ref, err)
		}
		if svc.Commit != tc.want || svc.Ref != tc.ref || svc.Git != tc.git {
			t.Errorf("Register(%s, %s) = %+v, want commit %s", tc.git, tc.ref, svc, tc.want)
		}
		if svc.Description != "The first service on souls" {
			t.Errorf("description = %q", svc.Description)
		}
	}
	_, err := c.Register(ctx, "svca", repo.Dir, "v1.0.0")
	wantCode(t, err, domain.CodeConflict)
}

func TestRegisterMissingRef(t *testing.T) {
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	repo.Commit(catalogtest.MyService, "v1")
	c, st, _ := newCatalog(t)
	_, err := c.Register(ctx, "my-service", repo.Dir, "v9.9.9")
	wantCode(t, err, domain.CodeUnprocessable)
	if !strings.Contains(err.Error(), `ref "v9.9.9" not found`) {
		t.Fatalf("message %q does not name the missing ref", err)
	}
	if _, err := st.GetService(ctx, "my-service"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("a refused service was recorded: %v", err)
	}
	_, err = c.Register(ctx, "other", filepath.Join(t.TempDir(), "nope"), "main")
	wantCode(t, err, domain.CodeUnprocessable)
}

func TestRegisterInvalidService(t *testing.T) {
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	files := map[string]string{}
	for k, v := range catalogtest.MyService {
		files[k] = v
	}
	files["scenario/create/main.yml"] = catalogtest.BrokenScenario
	repo.Commit(files, "broken")
	c, st, dir := newCatalog(t)
	_, err := c.Register(ctx, "my-service", repo.Dir, "master")
	wantCode(t, err, domain.CodeInvalid)
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("the refused commit left trees behind: %v", ents)
	}
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatal(err)
	}
	ps, ok := de.Details.([]apitypes.Problem)
	if !ok || len(ps) == 0 {
		t.Fatalf("details %#v, want problems", de.Details)
	}
	lines := map[int]bool{}
	for _, p := range ps {
		if p.File != "scenario/create/main.yml" {
			t.Errorf("problem in %s: %s", p.File, p.Text)
		}
		if !strings.HasPrefix(p.Text, p.File+":") {
			t.Errorf("problem text %q does not start with file:line", p.Text)
		}
		lines[p.Line] = true
	}
	if !lines[3] || !lines[8] {
		t.Errorf("problems %+v: want lines 3 (unknown module) and 8 (unknown key)", ps)
	}
	if _, err := st.GetService(ctx, "my-service"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("an invalid service was recorded: %v", err)
	}
}

func TestMaterializePerCommit(t *testing.T) {
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	c1 := repo.Commit(catalogtest.MyService, "v1")
	repo.Tag("v1")
	c, _, dir := newCatalog(t)
	if _, err := c.Register(ctx, "my-service", repo.Dir, "v1"); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "my-service", c1)
	if b, err := os.ReadFile(filepath.Join(tree, "scenario/create/main.yml")); err != nil || !strings.Contains(string(b), "core.pkg.installed") {
		t.Fatalf("materialized scenario: %q, %v", b, err)
	}
	// A marker proves the tree is reused, not written again.
	marker := filepath.Join(tree, ".marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	svc, err := c.Update(ctx, "my-service", "master", "") // same commit
	if err != nil || svc.Commit != c1 {
		t.Fatalf("Update to master: %+v, %v", svc, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("tree of %s was materialized again: %v", c1, err)
	}
	c2 := repo.Commit(map[string]string{"essence/_default.yaml": "banner: two\n"}, "v2")
	svc, err = c.Update(ctx, "my-service", "master", "")
	if err != nil || svc.Commit != c2 {
		t.Fatalf("Update to new master: %+v, %v", svc, err)
	}
	for _, commit := range []string{c1, c2} {
		if _, err := os.Stat(filepath.Join(dir, "my-service", commit, "service.yml")); err != nil {
			t.Errorf("tree of %s: %v", commit, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "my-service", ".tmp-*")); len(left) > 0 {
		t.Errorf("temporary trees left behind: %v", left)
	}

	// Open serves both pinned commits, cached.
	s1, err := c.Open(ctx, "my-service", c1)
	if err != nil {
		t.Fatal(err)
	}
	if s1b, _ := c.Open(ctx, "my-service", c1); s1b != s1 {
		t.Error("Open did not reuse the loaded service")
	}
	if _, ok := s1.Scenarios["create"]; !ok {
		t.Errorf("scenarios of %s: %v", c1, s1.Scenarios)
	}

	// A tree removed from disk is materialized again from the repository.
	if err := os.RemoveAll(filepath.Join(dir, "my-service", c2)); err != nil {
		t.Fatal(err)
	}
	p, err := c.Path(ctx, "my-service", c2)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(p, "essence/_default.yaml")); err != nil || string(b) != "banner: two\n" {
		t.Fatalf("re-materialized essence %q, %v", b, err)
	}

	if err := c.Delete(ctx, "my-service"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "my-service")); !os.IsNotExist(err) {
		t.Fatalf("trees of a deleted service remain: %v", err)
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	c, _, _ := newCatalog(t)
	for _, tc := range []struct{ name, git, ref string }{
		{"Bad/Name", "/tmp/x", "main"},
		{"..", "/tmp/x", "main"},
		{"ok", "", "main"},
		{"ok", "/tmp/x", ""},
		{"ok", "ftp://example.com/x.git", "main"},
	} {
		_, err := c.Register(ctx, tc.name, tc.git, tc.ref)
		wantCode(t, err, domain.CodeInvalid)
	}
	_, err := c.Open(ctx, "ok", "not-a-hash")
	wantCode(t, err, domain.CodeInvalid)
}

func TestRemoteMirror(t *testing.T) {
	// An unreachable remote is a 422 naming the source without its password.
	ctx := context.Background()
	c, _, dir := newCatalog(t)
	_, err := c.Register(ctx, "remote", "https://bob:hunter2@127.0.0.1:1/x.git", "main")
	wantCode(t, err, domain.CodeUnprocessable)
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the URL password: %v", err)
	}
	// Nothing of the source that could not be fetched is left.
	if ents, _ := os.ReadDir(filepath.Join(dir, ".mirrors")); len(ents) > 0 {
		t.Errorf("an empty mirror was left behind: %v", ents)
	}
}

func TestRemoteHTTP(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs the git binary to serve a repository over smart HTTP (git http-backend)")
	}
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	c1 := repo.Commit(catalogtest.MyService, "v1")
	repo.Tag("v1")
	srv := httptest.NewServer(&cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(repo.Dir), "GIT_HTTP_EXPORT_ALL=1"},
	})
	defer srv.Close()
	url := srv.URL + "/" + filepath.Base(repo.Dir)

	c, _, dir := newCatalog(t)
	svc, err := c.Register(ctx, "my-service", url, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if svc.Commit != c1 {
		t.Fatalf("commit %s, want %s", svc.Commit, c1)
	}
	c2 := repo.Commit(map[string]string{"essence/_default.yaml": "banner: two\n"}, "v2")
	svc, err = c.Update(ctx, "my-service", "master", "")
	if err != nil || svc.Commit != c2 {
		t.Fatalf("Update fetched %+v, %v; want %s", svc, err, c2)
	}
	if mirrors, _ := filepath.Glob(filepath.Join(dir, ".mirrors", "*.git")); len(mirrors) != 1 {
		t.Fatalf("mirrors %v, want one", mirrors)
	}
	_, err = c.Update(ctx, "my-service", "nope", "")
	wantCode(t, err, domain.CodeUnprocessable)
}
