package keeper_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/testutil"
)

// removeWAL deletes the SQLite write-ahead log and shared memory files of
// db, as a copy of the file alone would lack them.
func removeWAL(t *testing.T, db string) {
	t.Helper()
	for _, f := range []string{db + "-wal", db + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

// TestServeRefusesEmptyDatabase (issue 36): in an initialized data
// directory an empty keeper.db made `keeper serve` start a fresh store,
// report ready and lose every Archon, soul and incarnation without a word.
// Now serve exits non-zero with a message saying what happened and what to
// do, and leaves the file as it is; --reinitialize starts it on purpose.
func TestServeRefusesEmptyDatabase(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "keeper")
	if out, err := exec.Command(keeperBin, "init", "--data-dir", dataDir).CombinedOutput(); err != nil {
		t.Fatalf("keeper init: %v\n%s", err, out)
	}
	db := filepath.Join(dataDir, "keeper.db")
	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	removeWAL(t, db)

	// A keeper that serves the empty file (the defect) is killed by its
	// PID when the context ends, failing the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, keeperBin, "serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("keeper serve on an empty keeper.db did not fail: %v\n%s", err, out)
	}
	for _, want := range []string{"keeper.db is empty", "was initialized", "Backup and restore", "--reinitialize"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
		t.Fatalf("the refused start changed keeper.db: %v, %v", fi, err)
	}

	// --reinitialize starts it (empty) on purpose.
	addr := testutil.FreeAddr(t)
	testutil.StartProcess(t, "keeper serve --reinitialize", keeperBin, "serve", "--data-dir", dataDir, "--listen", addr, "--reinitialize")
	cl, err := apiclient.New("http://"+addr, "")
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool { return cl.Ready(context.Background()) == nil }, "reinitialized keeper ready")
}

// TestNewRefusesDatabaseWithoutArchons: a keeper.db with the schema but
// not a single Archon (a wrong restore, a truncated table) is refused too.
func TestNewRefusesDatabaseWithoutArchons(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); err != nil {
		t.Fatal(err)
	}
	execSQL(t, cfg.SQLitePath(), `PRAGMA foreign_keys = ON`, `DELETE FROM archons`)
	before, err := os.ReadFile(cfg.SQLitePath())
	if err != nil {
		t.Fatal(err)
	}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		k.Close()
		t.Fatal("a keeper was built on a database without Archons")
	}
	if !strings.Contains(err.Error(), "holds no Archon") || !strings.Contains(err.Error(), "--reinitialize") {
		t.Fatalf("the error does not say what is wrong: %v", err)
	}
	after, err := os.ReadFile(cfg.SQLitePath())
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatal("the refused start changed keeper.db")
	}
}

// execSQL runs statements on the SQLite file at path and closes it, so
// the write-ahead log is checkpointed into the file.
func execSQL(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// pageCount returns the page size and number of pages of the SQLite file.
func pageCount(t *testing.T, path string) (size, n int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return size, n
}

// corruptPage overwrites page n (1-based) of the SQLite file with garbage
// past its first bytes, as a failing disk would.
func corruptPage(t *testing.T, path string, n int64) {
	t.Helper()
	size, pages := pageCount(t, path)
	if n > pages {
		t.Fatalf("%s has %d pages, not %d", path, pages, n)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := make([]byte, size)
	for i := range junk {
		junk[i] = byte(0xA5 ^ i*7)
	}
	if _, err := f.WriteAt(junk, (n-1)*size); err != nil {
		t.Fatal(err)
	}
}

// ballast fills a table of its own with rows so the file has pages
// enough, and checkpoints it into the file.
func ballast(t *testing.T, path string, rows int) {
	t.Helper()
	stmts := []string{`CREATE TABLE ballast (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`}
	for range rows / 50 {
		stmts = append(stmts, `INSERT INTO ballast (v) SELECT printf('%.400c', 'x') FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < 50) SELECT i FROM c)`)
	}
	stmts = append(stmts, `PRAGMA wal_checkpoint(TRUNCATE)`)
	execSQL(t, path, stmts...)
}

// TestNewRefusesCorruptDatabase (issue 36): corrupt pages deep in
// keeper.db (page 60 or 90) still gave /readyz 200, and with page 60 the
// keeper never became leader. Now the start runs PRAGMA quick_check and
// refuses a damaged file with a message saying to restore it.
func TestNewRefusesCorruptDatabase(t *testing.T) {
	for _, page := range []int64{60, 90} {
		t.Run(fmt.Sprintf("page%d", page), func(t *testing.T) {
			ctx := context.Background()
			cfg := config.Default()
			cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
			if _, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg}); err != nil {
				t.Fatal(err)
			}
			ballast(t, cfg.SQLitePath(), 500)
			removeWAL(t, cfg.SQLitePath())
			corruptPage(t, cfg.SQLitePath(), page)
			k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
			if err == nil {
				k.Close()
				t.Fatalf("a keeper was built on a keeper.db with page %d corrupt", page)
			}
			for _, want := range []string{"failed its integrity check", "quick_check", "restore the database from a backup"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
		})
	}
}

// TestIntegrityFailureFailsReadyz: a file damaged under a serving keeper
// is found by the next check, which turns /readyz to 503 and
// soulstack_store_integrity_ok to 0.
func TestIntegrityFailureFailsReadyz(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ballast(t, cfg.SQLitePath(), 1000)
	_, pages := pageCount(t, cfg.SQLitePath())
	k, addr := serveKeeper(t, cfg, "keeper")
	cl, err := apiclient.New("http://"+addr, res.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool { return cl.Ready(ctx) == nil }, "keeper ready")
	if got := metric(t, addr, "soulstack_store_integrity_ok"); got != "1" {
		t.Fatalf("soulstack_store_integrity_ok on a sound store: %q", got)
	}

	corruptPage(t, cfg.SQLitePath(), pages-5) // a ballast page the keeper never writes
	if err := k.CheckIntegrity(ctx); err == nil {
		t.Fatal("the integrity check passed a damaged file")
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "integrity check") {
		t.Fatalf("/readyz on a damaged store: %d %s", resp.StatusCode, body)
	}
	if got := metric(t, addr, "soulstack_store_integrity_ok"); got != "0" {
		t.Fatalf("soulstack_store_integrity_ok on a damaged store: %q", got)
	}
}

// metric returns the value of the unlabelled metric name at /metrics.
func metric(t *testing.T, addr, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}
