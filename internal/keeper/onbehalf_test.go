package keeper_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/testutil"
)

// planter adds a schedule of beacon at every attempt of its condition,
// which never holds: a Checker task that keeps making mutating API calls.
const planter = `steps:
  plant:
    conditions:
      - apicall: "checker procedure schedule add --name beacon --cron '0 0 1 1 *'"
        expect:
          - filter: "id"
            op: "=="
            value: "never"
        attempts:
          max: 20
          interval: 0.25
        on-error:
          - error-type: AttemptsLimitReached
            handler: _exit
`

// TestM4CheckerCallsActForTheOwner: audit M4 — the API calls of a Checker
// task act for the Archon who launched it, not for the Checker: the
// schedules an operator's procedure adds are hers (so they pause with
// her, instead of being the Checker's forever), its mutations are audited
// under her with "via" naming the Checker, and once she is disabled her
// still-running task's calls are refused (403, audited with on_behalf_of).
func TestM4CheckerCallsActForTheOwner(t *testing.T) {
	ctx := context.Background()
	url, admin := serveFreshKeeper(t)
	created, err := admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "olga", Role: "operator", TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	olgaID := created.Archon.ID
	olga, err := apiclient.New(url, created.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := olga.PutProcedure(ctx, "beacon", "steps:\n  tick:\n    action:\n      log: tick\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := olga.PutProcedure(ctx, "planter", planter); err != nil {
		t.Fatal(err)
	}
	launched, err := olga.ExecuteProcedure(ctx, "planter", nil)
	if err != nil || len(launched.TaskIDs) != 1 {
		t.Fatalf("execute: %+v, %v", launched, err)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool {
		scs, err := admin.ListSchedules(ctx)
		return err == nil && len(scs) >= 2
	}, "the task to add schedules")
	scs, err := admin.ListSchedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		if sc.OwnerID != olgaID {
			t.Fatalf("a schedule olga's task added is owned by %q (%s), not olga %s", sc.Owner, sc.OwnerID, olgaID)
		}
	}
	entries, err := admin.ListAudit(ctx, apitypes.AuditQuery{Action: "POST /v1/schedules"})
	if err != nil {
		t.Fatal(err)
	}
	var via string
	for _, e := range entries {
		if e.ArchonID != olgaID || e.Summary["via"] == nil {
			t.Fatalf("the task's call audited as %+v, want under olga via the Checker", e)
		}
		via, _ = e.Summary["via"].(string)
	}
	who, err := admin.ListArchons(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range who {
		if a.ID == via && a.Name != "checker" {
			t.Fatalf("via names %s (%s), not the Checker", a.Name, a.ID)
		}
	}

	if _, err := admin.DisableArchon(ctx, olgaID); err != nil {
		t.Fatal(err)
	}
	disabledAt := time.Now()
	var task apitypes.CheckerTask
	testutil.WaitFor(t, 30*time.Second, func() bool {
		task, err = admin.GetCheckerTask(ctx, launched.TaskIDs[0])
		return err == nil && checker.IsTerminal(task.Status)
	}, "the planter task to end")
	var log strings.Builder
	for _, l := range task.Log {
		log.WriteString(l.Message + "\n")
	}
	if !strings.Contains(log.String(), "olga") || !strings.Contains(log.String(), "is disabled") {
		t.Errorf("the task's log does not say its calls were refused for the disabled owner:\n%s", log.String())
	}
	after, err := admin.ListSchedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range after {
		if sc.CreatedAt.After(disabledAt) {
			t.Errorf("schedule %s added after olga was disabled", sc.ID)
		}
		if !sc.Paused {
			t.Errorf("schedule %s of the disabled olga is not paused", sc.ID)
		}
	}
	entries, err = admin.ListAudit(ctx, apitypes.AuditQuery{Action: "POST /v1/schedules"})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range entries {
		if e.Summary["on_behalf_of"] == olgaID {
			refused++
			if e.ArchonID != via || e.Summary["status"] != float64(403) {
				t.Errorf("refused call audited as %+v, want the Checker's with status 403", e)
			}
		}
	}
	if refused == 0 {
		t.Errorf("no refused call of the disabled olga's task in the audit log")
	}
}

// serveFreshKeeper initializes and serves a keeper on loopback until the
// test ends; it returns its URL and a client with the first admin's token.
func serveFreshKeeper(t *testing.T) (string, *apiclient.Client) {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := serveOn(t, k)
	t.Cleanup(func() {
		_ = stop()
		k.Close()
	})
	url := "http://" + addr
	admin, err := apiclient.New(url, res.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	return url, admin
}

// TestL8CheckerTasksCannotMintTokens: a procedure that runs `token create`
// would put a token in its step log, which every viewer reads, and a
// token minted with the Checker's (ten years) would outlive the operator
// who wrote the procedure (audit L8 and M4): the command is refused in
// procedures, whoever launched the task, and no token is minted.
func TestL8CheckerTasksCannotMintTokens(t *testing.T) {
	ctx := context.Background()
	url, admin := serveFreshKeeper(t)
	created, err := admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "olga", Role: "operator", TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	olga, err := apiclient.New(url, created.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	const mint = "steps:\n  mint:\n    action:\n      apicall: \"token create --ttl 1h\"\n      log: minted\n"
	if _, err := olga.PutProcedure(ctx, "mint", mint); err != nil {
		t.Fatal(err)
	}
	before, err := admin.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*apiclient.Client{olga, admin} {
		launched, err := c.ExecuteProcedure(ctx, "mint", nil)
		if err != nil || len(launched.TaskIDs) != 1 {
			t.Fatalf("execute: %+v, %v", launched, err)
		}
		var task apitypes.CheckerTask
		testutil.WaitFor(t, 20*time.Second, func() bool {
			task, err = admin.GetCheckerTask(ctx, launched.TaskIDs[0])
			return err == nil && checker.IsTerminal(task.Status)
		}, "the mint task to end")
		var log strings.Builder
		for _, l := range task.Log {
			log.WriteString(l.Message + "\n")
		}
		if task.Status != checker.StatusFailure || !strings.Contains(log.String(), "token create is not available in procedures") || strings.Contains(log.String(), "eyJ") {
			t.Errorf("the mint task: %s\n%s", task.Status, log.String())
		}
	}
	after, err := admin.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("%d tokens before the tasks, %d after", len(before), len(after))
	}
}
