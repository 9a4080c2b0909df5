package cli_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/testutil"
)

// liveKeeper is a real Keeper (keeper.Init + keeper.New, SQLite in a temp
// dir) serving on a loopback port, with its first Archon's token.
type liveKeeper struct {
	URL         string
	Token       string
	Fingerprint string
	Dir         string
	K           *keeper.Keeper
}

// startKeeper initializes and serves a Keeper until the test ends.
func startKeeper(t *testing.T) *liveKeeper {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "keeper")
	cfg.ShutdownTimeout = config.Duration(2 * time.Second)
	ini, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg, ArchonName: "root"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("keeper stopped: %v", err)
		}
		k.Close()
	})
	lk := &liveKeeper{URL: "http://" + ln.Addr().String(), Token: ini.Token.Token, Fingerprint: ini.Fingerprint, Dir: dir, K: k}
	c := lk.client(t)
	testutil.WaitFor(t, 10*time.Second, func() bool { return c.Ready(ctx) == nil }, "keeper ready")
	return lk
}

func (k *liveKeeper) client(t *testing.T) *apiclient.Client {
	t.Helper()
	c, err := apiclient.New(k.URL, k.Token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ctlResult is one soulctl invocation's outcome.
type ctlResult struct {
	Code           int
	Stdout, Stderr string
}

// ctl runs soulctl in-process with the given environment (nil: empty) and
// no config file unless the args or env name one.
func ctl(t *testing.T, env map[string]string, stdin string, args ...string) ctlResult {
	t.Helper()
	var out, errb bytes.Buffer
	g := &cli.Globals{
		Getenv: func(k string) string { return env[k] },
		Stdin:  strings.NewReader(stdin),
	}
	if _, ok := env["HOME"]; !ok {
		// Never read the real user's config.
		home := t.TempDir()
		g.Getenv = func(k string) string {
			if k == "HOME" {
				return home
			}
			return env[k]
		}
	}
	code := g.Run(context.Background(), args, &out, &errb)
	return ctlResult{Code: code, Stdout: out.String(), Stderr: errb.String()}
}

// as runs soulctl against k with its root token given by flags.
func (k *liveKeeper) ctl(t *testing.T, args ...string) ctlResult {
	t.Helper()
	return ctl(t, nil, "", append([]string{"--keeper", k.URL, "--token", k.Token}, args...)...)
}

// must fails the test unless r exited 0.
func (r ctlResult) must(t *testing.T) ctlResult {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("soulctl exited %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	return r
}
