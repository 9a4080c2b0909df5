package catalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
)

// TestInvalidPinnedCommitAdvice: a commit an incarnation is pinned to that
// a (stricter) keeper now refuses says how to get out — a fixed commit the
// service and its incarnations move to — not "register again", which
// would be refused (the name is taken).
func TestInvalidPinnedCommitAdvice(t *testing.T) {
	ctx := context.Background()
	repo := catalogtest.NewRepo(t)
	commit := repo.Commit(catalogtest.MyService, "v1")
	c, st, dir := newCatalog(t)
	if _, err := c.Register(ctx, "my-service", repo.Dir, "master"); err != nil {
		t.Fatal(err)
	}
	strict, err := catalog.New(catalog.Config{Dir: dir, Store: st, Load: func(context.Context, string) (*dsl.Service, error) {
		return nil, dsl.Problems{{Pos: dsl.Pos{File: "scenario/create/main.yml", Line: 1, Col: 1}, Message: "refused by a newer rule"}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = strict.Open(ctx, "my-service", commit)
	wantCode(t, err, domain.CodeInvalid)
	if msg := err.Error(); !strings.Contains(msg, "soulctl service update my-service") || !strings.Contains(msg, "soulctl incarnation upgrade") || strings.Contains(msg, "register again") {
		t.Errorf("opening a pinned commit now invalid: %v", err)
	}
	_, err = strict.Register(ctx, "other", repo.Dir, "master")
	wantCode(t, err, domain.CodeInvalid)
	if msg := err.Error(); !strings.Contains(msg, "fix the repository and try again") {
		t.Errorf("registering an invalid commit: %v", err)
	}
}
