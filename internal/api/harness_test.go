package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/api"
	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/install"
	_ "github.com/soulstack/soulstack/internal/module/core" // modules the DSL validates against
	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// fingerprint stands in for the keeper CA fingerprint in join tokens.
const fingerprint = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// env is a real Operator API on a real SQLite store, served on loopback,
// with one Archon of each role.
type env struct {
	t        *testing.T
	st       *sqlite.Store
	auth     *auth.Authority
	api      *api.Server
	srv      *httptest.Server
	reg      *prometheus.Registry
	tokens   map[auth.Role]string
	archons  map[auth.Role]store.Archon
	expired  string // a valid signature whose time is over
	revoked  string // a revoked admin token
	services string // catalog directory
	cat      *catalog.Catalog
	sim      *dispatch.Sim  // the engine's simulated souls (add hosts with sim.AddHost)
	eng      *engine.Engine // the run engine behind incarnations and runs
	secrets  *secrets.Store // the secret store behind /v1/secrets
	dbFile   string         // the SQLite database file
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the API's config changed by edit (nil: none).
func newEnvWith(t *testing.T, edit func(*api.Config)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(ctx, st, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(catalog.Config{Dir: filepath.Join(dir, "services"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ck, err := checker.New(checker.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	secretsKey, err := secrets.LoadOrCreateKey(secrets.KeyFile(keyFile))
	if err != nil {
		t.Fatal(err)
	}
	sec, err := secrets.New(st, secretsKey)
	if err != nil {
		t.Fatal(err)
	}
	sim := dispatch.NewSim(nil, nil)
	eng, err := engine.New(engine.Config{Store: st, Dispatcher: sim, Local: sim, Services: cat, KeeperID: "api-test", Secrets: sec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	reg := prometheus.NewRegistry()
	acfg := api.Config{Store: st, Auth: a, Catalog: cat, Checker: ck, Engine: eng, Secrets: sec, Fingerprint: fingerprint, Registry: reg,
		Install: &install.Server{Binaries: &install.SoulBinaries{Dirs: []string{t.TempDir()}}}}
	if edit != nil {
		edit(&acfg)
	}
	s, err := api.New(acfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(contract.wrap(s.Handler()))
	t.Cleanup(srv.Close)
	e := &env{t: t, st: st, auth: a, api: s, srv: srv, reg: reg, services: filepath.Join(dir, "services"), cat: cat, sim: sim, eng: eng, secrets: sec, dbFile: filepath.Join(dir, "keeper.db"),
		tokens: map[auth.Role]string{}, archons: map[auth.Role]store.Archon{}}
	for _, r := range auth.Roles {
		ar, err := a.CreateArchon(ctx, string(r)+"-archon", r)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := a.IssueToken(ctx, ar, 24*time.Hour, "test")
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[r], e.archons[r] = tok.Token, ar
	}
	past, err := auth.New(ctx, st, keyFile, auth.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	old, err := past.IssueToken(ctx, e.archons[auth.RoleAdmin], time.Hour, "expired")
	if err != nil {
		t.Fatal(err)
	}
	e.expired = old.Token
	rv, err := a.IssueToken(ctx, e.archons[auth.RoleAdmin], time.Hour, "to revoke")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(ctx, rv.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	e.revoked = rv.Token
	return e
}

// client is an apiclient for role.
func (e *env) client(r auth.Role) *apiclient.Client {
	e.t.Helper()
	c, err := apiclient.New(e.srv.URL, e.tokens[r])
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// do sends a raw request and returns the status and the body.
func (e *env) do(method, path, token, body string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// wantError checks an error answer: status and the JSON error body's code.
func (e *env) wantError(method, path string, status int, code string, b []byte, gotStatus int) apitypes.ErrorDetail {
	e.t.Helper()
	var eb struct {
		Error apitypes.ErrorDetail `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&eb); err != nil {
		e.t.Fatalf("%s %s: body %q is not a JSON error: %v", method, path, b, err)
	}
	if gotStatus != status || eb.Error.Code != code || eb.Error.Message == "" {
		e.t.Fatalf("%s %s: %d %s %q, want %d %s with a message", method, path, gotStatus, eb.Error.Code, eb.Error.Message, status, code)
	}
	return eb.Error
}

// concrete fills a route pattern's wildcards.
func concrete(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") {
			seg = "x"
		}
		out = append(out, seg)
	}
	return method, strings.Join(out, "/")
}
