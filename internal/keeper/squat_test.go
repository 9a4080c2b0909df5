package keeper_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestL2SquattedSIDFreed: audit L2 with real soul processes — a stranger
// says hello as squat-5 and an admin rejects it; the real host, with a
// valid join token, is refused and told the command that frees the SID;
// after `DELETE /v1/souls/squat-5` it joins.
func TestL2SquattedSIDFreed(t *testing.T) {
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
	_, addr := serveKeeper(t, cfg, "keeper")
	c, err := apiclient.New("http://"+addr, res.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	soul := func(name string, extra ...string) *testutil.Process {
		d := filepath.Join(dir, name)
		args := append([]string{"run", "--keeper", "https://" + addr, "--sid", "squat-5", "--data-dir", d, "--root", filepath.Join(d, "root"),
			"--reconnect-min", "50ms", "--reconnect-max", "300ms"}, extra...)
		return testutil.StartProcess(t, "soul "+name, soulBin, args...)
	}
	status := func() string {
		s, err := c.GetSoul(ctx, "squat-5")
		if err != nil {
			return err.Error()
		}
		return s.Status
	}
	squatter := soul("squatter", "--fingerprint", res.Fingerprint)
	testutil.WaitFor(t, 15*time.Second, func() bool { return status() == store.SoulPending }, "the squatter pending")
	if _, err := c.RejectSoul(ctx, "squat-5"); err != nil {
		t.Fatal(err)
	}
	squatter.Wait(15 * time.Second)

	jt, err := c.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"web"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	real := soul("real", "--join-token", jt.Token)
	if err := real.Wait(15 * time.Second); err == nil {
		t.Fatalf("the real host exited 0 while its SID is rejected:\n%s", real.Output())
	}
	if !strings.Contains(real.Output(), "soulctl souls delete squat-5") {
		t.Fatalf("the refusal does not name the command that frees the SID:\n%s", real.Output())
	}

	d, err := c.DeleteSoul(ctx, "squat-5")
	if err != nil || !d.Deleted {
		t.Fatalf("delete: %+v, %v", d, err)
	}
	soul("real-again", "--join-token", jt.Token)
	testutil.WaitFor(t, 15*time.Second, func() bool { return status() == store.SoulConnected }, "the real host connected")
	s, err := c.GetSoul(ctx, "squat-5")
	if err != nil || strings.Join(s.Covens, ",") != "web" {
		t.Fatalf("the real host: %+v, %v", s, err)
	}
}
