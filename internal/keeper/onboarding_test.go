package keeper_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestOnboardingRoundTrip runs an in-process keeper on loopback and real
// soul processes: one joins with a join token made through the API, one
// waits pending until accepted through the API, one is rejected through
// the API; their soulprints show in the API.
func TestOnboardingRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "keeper")
	cfg.HeartbeatInterval = config.Duration(time.Second)
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- k.Serve(runCtx, ln) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("keeper logs:\n%s", logs)
		}
	}()
	addr := ln.Addr().String()
	c, err := apiclient.New("http://"+addr, res.Token.Token)
	if err != nil {
		t.Fatal(err)
	}

	jt, err := c.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"prod", "web"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	soul := func(sid string, extra ...string) *testutil.Process {
		d := filepath.Join(dir, sid)
		args := append([]string{"run", "--keeper", "https://" + addr, "--sid", sid, "--data-dir", d, "--root", filepath.Join(d, "root"),
			"--reconnect-min", "50ms", "--reconnect-max", "300ms"}, extra...)
		return testutil.StartProcess(t, "soul "+sid, soulBin, args...)
	}
	soul("alpha", "--join-token", jt.Token)
	soul("beta", "--fingerprint", res.Fingerprint)
	gamma := soul("gamma", "--fingerprint", res.Fingerprint)

	status := func(sid string) string {
		s, err := c.GetSoul(ctx, sid)
		if err != nil {
			return err.Error()
		}
		return s.Status
	}
	testutil.WaitFor(t, 15*time.Second, func() bool { return status("alpha") == store.SoulConnected }, "alpha connected")
	testutil.WaitFor(t, 15*time.Second, func() bool { return status("beta") == store.SoulPending && status("gamma") == store.SoulPending }, "beta and gamma pending")

	pending, err := c.ListSouls(ctx, apitypes.SoulQuery{Status: store.SoulPending})
	if err != nil || len(pending) != 2 {
		t.Fatalf("pending souls %v, %v", pending, err)
	}
	if _, err := c.AcceptSoul(ctx, "beta", []string{"db"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RejectSoul(ctx, "gamma"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, func() bool { return status("beta") == store.SoulConnected }, "beta connected after accept")
	gamma.Wait(15 * time.Second)
	if status("gamma") != store.SoulRejected {
		t.Fatalf("gamma is %s", status("gamma"))
	}

	prod, err := c.ListSouls(ctx, apitypes.SoulQuery{Covens: []string{"prod"}})
	if err != nil || len(prod) != 1 || prod[0].SID != "alpha" || !slices.Equal(prod[0].Covens, []string{"prod", "web"}) {
		t.Fatalf("prod souls %+v, %v", prod, err)
	}
	for _, sid := range []string{"alpha", "beta"} {
		s, err := c.GetSoul(ctx, sid)
		if err != nil || s.Soulprint["sid"] != sid || s.KeeperID != k.ID() {
			t.Fatalf("soul %s: %+v, %v", sid, s, err)
		}
	}
	if got := k.Gateway().ConnectedSIDs(); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Fatalf("connected %v", got)
	}

	// Shutting the keeper down closes the streams: the souls go
	// disconnected (they keep retrying) and Serve returns promptly.
	stop()
	select {
	case err := <-served:
		served <- err
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel with souls connected")
	}
	for _, sid := range []string{"alpha", "beta"} {
		s, err := k.Store().GetSoul(ctx, sid)
		if err != nil || s.Status != store.SoulDisconnected {
			t.Fatalf("after shutdown soul %s: %+v, %v", sid, s.Status, err)
		}
	}
}
