package keeper_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// oldToken is one token the previous version issued (testdata/oldkeeper/
// tokens.json, written by make.sh with that version's keeper) and what it
// must do after the upgrade.
type oldToken struct {
	Name    string `json:"name"`
	Token   string `json:"token"`
	Archon  string `json:"archon"`
	Role    string `json:"role"`
	Works   bool   `json:"works"`
	Refusal string `json:"refusal"`
}

// TestM6PreviousVersionDatabase: audit M6 on what the previous version
// really left behind — a data directory and a PostgreSQL database made by
// the keeper of commit 6d99f91 (the audited one, signing key in the
// settings table) through its own `keeper init` and API
// (testdata/oldkeeper/make.sh). `keeper init` on it is refused as
// initialized and moves the key out; the keeper then starts on it, the key
// is in a 0600 file and no longer in the database — not even in the SQLite
// file's free pages, where a copy of the file would still give it away —
// and every token the old version issued works with its stored expiry,
// while its revoked, expired and disabled-archon tokens stay refused.
func TestM6PreviousVersionDatabase(t *testing.T) {
	var fixtures map[string][]oldToken
	b, err := os.ReadFile("testdata/oldkeeper/tokens.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fixtures); err != nil {
		t.Fatal(err)
	}
	t.Run("sqlite", func(t *testing.T) {
		cfg := config.Default()
		cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
		untar(t, "testdata/oldkeeper/sqlite.tar.gz", cfg.DataDir)
		seed := upgradeOldKeeper(t, cfg, fixtures["sqlite"])
		seedNotInSQLiteFiles(t, cfg, seed)
	})
	t.Run("postgres", func(t *testing.T) {
		cfg := config.Default()
		cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
		cfg.DatabaseURL = pgtest.FreshDatabase(t)
		untar(t, "testdata/oldkeeper/pgdata.tar.gz", cfg.DataDir)
		restoreDump(t, cfg.DatabaseURL, "testdata/oldkeeper/postgres.sql.gz")
		upgradeOldKeeper(t, cfg, fixtures["postgres"])
	})
}

// upgradeOldKeeper runs `keeper init` (refused) and then a keeper on the
// old data in cfg, checks the key moved out and each token, twice (the
// second keeper starts from the key file alone), and returns the key's
// seed.
func upgradeOldKeeper(t *testing.T, cfg config.Keeper, tokens []oldToken) []byte {
	t.Helper()
	ctx := context.Background()
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	if _, err := os.Stat(cfg.SigningKeyFile()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old data dir already has a key file: %v", err)
	}
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("keeper init on the previous version's keeper: %v, want conflict (already initialized)", err)
	}
	fi, err := os.Stat(cfg.SigningKeyFile())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keeper init did not move the key into a 0600 file: %v, %v", fi, err)
	}
	for round := 1; round <= 2; round++ {
		k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("keeper start %d on the previous version's database: %v", round, err)
		}
		if _, err := k.Store().GetSetting(ctx, auth.SettingSigningKey); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Errorf("start %d: the signing key is still in the database: %v", round, err)
		}
		serveAndCheckTokens(t, k, tokens)
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return keyFileSeed(t, cfg)
}

// serveAndCheckTokens serves k on loopback and calls whoami with each
// token.
func serveAndCheckTokens(t *testing.T, k *keeper.Keeper, tokens []oldToken) {
	t.Helper()
	ctx := context.Background()
	addr, stop := serveOn(t, k)
	defer func() { _ = stop() }()
	if len(tokens) < 7 {
		t.Fatalf("tokens.json lists %d tokens, want the 7 make.sh issues", len(tokens))
	}
	for _, tok := range tokens {
		c, err := apiclient.New("http://"+addr, tok.Token)
		if err != nil {
			t.Fatal(err)
		}
		who, err := c.Whoami(ctx)
		if !tok.Works {
			if !apiclient.IsCode(err, domain.CodeUnauthorized) || !strings.Contains(err.Error(), tok.Refusal) {
				t.Errorf("%s token: %+v, %v; want 401 %s", tok.Name, who, err, tok.Refusal)
			}
			continue
		}
		exp := jwtExpiry(t, tok.Token)
		if err != nil || who.Name != tok.Archon || who.Role != tok.Role || !who.ExpiresAt.Equal(exp) {
			t.Errorf("%s token after the upgrade: %+v, %v; want %s (%s) until %s", tok.Name, who, err, tok.Archon, tok.Role, exp)
		}
	}
}

// seedNotInSQLiteFiles fails the test when the SQLite database of cfg or
// its WAL still holds seed in its bytes: a copy of the file would still
// mint admin tokens.
func seedNotInSQLiteFiles(t *testing.T, cfg config.Keeper, seed []byte) {
	t.Helper()
	for _, p := range []string{cfg.SQLitePath(), cfg.SQLitePath() + "-wal"} {
		raw, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, seed) {
			t.Errorf("%s still holds the signing key's seed in its bytes: a copy of the file mints admin tokens", p)
		}
	}
}

// jwtExpiry reads the exp claim of a JWT without verifying it: the
// previous version stored the same expiry in the token's record.
func jwtExpiry(t *testing.T, tok string) time.Time {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	return time.Unix(claims.Exp, 0)
}

// untar extracts a gzipped tar of regular files and directories into dir,
// keeping their modes.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, h.FileInfo().Mode().Perm())
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, h.FileInfo().Mode().Perm())
			}
		default:
			t.Fatalf("%s: unexpected entry %s", archive, h.Name)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// restoreDump loads a gzipped plain pg_dump into the database at url,
// leaving out psql's meta-commands (\restrict).
func restoreDump(t *testing.T, url, dump string) {
	t.Helper()
	ctx := context.Background()
	f, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var sql strings.Builder
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), `\`) {
			sql.WriteString(sc.Text())
			sql.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql.String()); err != nil {
		t.Fatalf("restoring %s: %v", dump, err)
	}
}
