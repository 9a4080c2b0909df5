package keeper_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// TestPostgresKeepers initializes a keeper on PostgreSQL and runs two
// keepers on that database: a token the first issued works on the second
// (the signing key lives in the database), and initializing again is
// refused.
func TestPostgresKeepers(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.FreshDatabase(t)
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "k1")
	cfg.DatabaseURL = dbURL
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	cfg2 := cfg
	cfg2.DataDir = filepath.Join(dir, "k2")
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg2}); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("second init on the same database: %v", err)
	}
	// Keepers sharing a database share the TLS identity souls pin.
	shareKeeperFiles(t, cfg, cfg2)

	var clients []*apiclient.Client
	for _, c := range []config.Keeper{cfg, cfg2} {
		k, addr := serveKeeper(t, c, "keeper in "+filepath.Base(c.DataDir))
		if k.Fingerprint() != res.Fingerprint {
			t.Fatalf("keeper fingerprint %s, init said %s", k.Fingerprint(), res.Fingerprint)
		}
		cl, err := apiclient.New("http://"+addr, res.Token.Token)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
	}
	created, err := clients[0].CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "ops", Role: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	if who, err := clients[1].Whoami(ctx); err != nil || who.ArchonID != res.Archon.ID {
		t.Fatalf("whoami on the second keeper: %+v, %v", who, err)
	}
	// A revocation on one keeper holds on the other.
	if err := clients[1].RevokeToken(ctx, created.Token.ID); err != nil {
		t.Fatal(err)
	}
	ops, _ := apiclient.New(clients[0].BaseURL(), created.Token.Token)
	if _, err := ops.Whoami(ctx); domain.ErrorCode(err) != domain.CodeUnauthorized {
		t.Fatalf("revoked token on the first keeper: %v", err)
	}
	if err := clients[0].Ready(ctx); err != nil {
		t.Fatal(err)
	}
}
