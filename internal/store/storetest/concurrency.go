package storetest

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var concurrencyTests = []test{
	{"Writers", testConcurrentWriters},
	{"StartRunRace", testStartRunRace},
	{"ClaimTickRace", testClaimTickRace},
	{"LeaseRace", testLeaseRace},
	{"CommitAbortRace", testCommitAbortRace},
	{"CreateSoulRace", testCreateSoulRace},
	{"JoinTokenUseRace", testJoinTokenUseRace},
	{"AdminsDisablingEachOther", testAdminDisableRace},
}

// parallel runs fn(i) for i in [0, n) on n goroutines and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

// testConcurrentWriters: many goroutines writing at once, transactions
// included, never see an error (on SQLite: no SQLITE_BUSY).
func testConcurrentWriters(t *testing.T, s store.Store) {
	ctx := t.Context()
	const workers, rounds = 12, 15
	for w := range workers {
		readyIncarnation(t, s, "redis", fmt.Sprintf("inc%02d", w))
	}
	errs := make(chan error, workers*rounds*5)
	parallel(workers, func(w int) {
		inc := fmt.Sprintf("inc%02d", w)
		for r := range rounds {
			sid := fmt.Sprintf("w%02d-%02d", w, r)
			run := fmt.Sprintf("%s-r%02d", inc, r)
			errs <- s.UpsertSoul(ctx, soul(sid, "redis"))
			errs <- s.AppendAudit(ctx, store.AuditEntry{Action: "test", Target: sid})
			errs <- s.StartRun(ctx, store.Run{ID: run, Incarnation: inc, Scenario: "x"})
			errs <- s.RecordResults(ctx, []store.HostResult{hostResult(run, 1, sid, "ok"), hostResult(run, 2, sid, "ok")})
			errs <- s.CommitRun(ctx, run, map[string]any{"round": float64(r)}, store.Snapshot{}, base)
			if _, err := s.ListSouls(ctx, store.SoulFilter{Covens: []string{"redis"}}); err != nil {
				errs <- err
			}
		}
	})
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	souls, err := s.ListSouls(ctx, store.SoulFilter{})
	must(t, err)
	if len(souls) != workers*rounds {
		t.Fatalf("%d souls, want %d", len(souls), workers*rounds)
	}
	for w := range workers {
		inc := fmt.Sprintf("inc%02d", w)
		wantSlot(t, s, inc, store.IncarnationReady, "", map[string]any{"round": float64(rounds - 1)})
		history, err := s.ListHistory(ctx, inc, 0)
		must(t, err)
		if len(history) != rounds+1 {
			t.Fatalf("%s: %d snapshots, want %d", inc, len(history), rounds+1)
		}
	}
}

// testStartRunRace: of concurrent StartRuns on one incarnation exactly one
// wins; the others get a conflict naming the winner.
func testStartRunRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	readyIncarnation(t, s, "redis", "cache")
	const n = 10
	errs := make([]error, n)
	parallel(n, func(i int) {
		errs[i] = s.StartRun(ctx, store.Run{ID: fmt.Sprintf("r%d", i), Incarnation: "cache", Scenario: "x"})
	})
	winner := ""
	for i, err := range errs {
		if err == nil {
			if winner != "" {
				t.Fatalf("two runs started: %s and r%d", winner, i)
			}
			winner = fmt.Sprintf("r%d", i)
		}
	}
	if winner == "" {
		t.Fatalf("no run started: %v", errs)
	}
	for _, err := range errs {
		if err != nil {
			diff(t, "conflict details", wantConflict(t, err), winner)
		}
	}
	wantSlot(t, s, "cache", store.IncarnationApplying, winner, map[string]any{"created": true})
	runs, err := s.ListRuns(ctx, "cache", 0)
	must(t, err)
	if len(runs) != 2 {
		t.Fatalf("%d runs recorded, want 2 (create and the winner)", len(runs))
	}
}

// testClaimTickRace: a tick claimed by many keepers at once runs once.
func testClaimTickRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.PutProcedure(ctx, store.Procedure{Name: "p", Source: procedureSource}))
	must(t, s.CreateSchedule(ctx, store.Schedule{ID: "s1", Procedure: "p", Cron: "* * * * *"}))
	const n, ticks = 8, 5
	var mu sync.Mutex
	granted := map[time.Time]int{}
	parallel(n, func(int) {
		for k := range ticks {
			tick := at(time.Duration(k) * time.Minute)
			ok, err := s.ClaimTick(ctx, "s1", tick)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				granted[tick]++
				mu.Unlock()
			}
		}
	})
	for k := range ticks {
		if got := granted[at(time.Duration(k)*time.Minute)]; got != 1 {
			t.Errorf("tick %d granted %d times, want once", k, got)
		}
	}
}

// testLeaseRace: of keepers racing for a free lease exactly one gets it.
func testLeaseRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 10
	got := make([]bool, n)
	parallel(n, func(i int) {
		ok, err := s.TryLease(ctx, "leader", fmt.Sprintf("k%d", i), time.Minute, base)
		if err != nil {
			t.Error(err)
		}
		got[i] = ok
	})
	holders := 0
	for _, ok := range got {
		if ok {
			holders++
		}
	}
	if holders != 1 {
		t.Fatalf("%d keepers hold the lease, want 1", holders)
	}
}

// testCommitAbortRace: a commit racing a keeper-restart abort either
// commits everything or nothing.
func testCommitAbortRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 6
	for i := range n {
		readyIncarnation(t, s, "redis", fmt.Sprintf("inc%d", i))
		must(t, s.StartRun(ctx, store.Run{ID: fmt.Sprintf("r%d", i), Incarnation: fmt.Sprintf("inc%d", i), Scenario: "x", KeeperID: "k1"}))
	}
	commitErrs := make([]error, n)
	var aborted []store.Run
	var abortErr error
	parallel(n+1, func(i int) {
		if i == n {
			aborted, abortErr = s.AbortRuns(ctx, "k1", base)
			return
		}
		commitErrs[i] = s.CommitRun(ctx, fmt.Sprintf("r%d", i), map[string]any{"new": true}, store.Snapshot{}, base)
	})
	must(t, abortErr)
	wasAborted := map[string]bool{}
	for _, r := range aborted {
		wasAborted[r.ID] = true
	}
	for i := range n {
		inc, run := fmt.Sprintf("inc%d", i), fmt.Sprintf("r%d", i)
		history, err := s.ListHistory(ctx, inc, 0)
		must(t, err)
		if commitErrs[i] == nil {
			if wasAborted[run] {
				t.Fatalf("%s both committed and aborted", run)
			}
			wantSlot(t, s, inc, store.IncarnationReady, "", map[string]any{"new": true})
			if len(history) != 2 {
				t.Fatalf("%s committed with %d snapshots", inc, len(history))
			}
			continue
		}
		if domain.ErrorCode(commitErrs[i]) != domain.CodeConflict || !wasAborted[run] {
			t.Fatalf("%s: commit error %v, aborted %v", run, commitErrs[i], wasAborted[run])
		}
		wantSlot(t, s, inc, store.IncarnationErrorLocked, "", map[string]any{"created": true})
		if len(history) != 1 {
			t.Fatalf("%s aborted with %d snapshots", inc, len(history))
		}
	}
}

// testCreateSoulRace: keepers registering one SID at once (two first
// hellos on two keepers) — exactly one CreateSoul wins, the others get a
// conflict, and the stored key is the winner's.
func testCreateSoulRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 8
	errs := make([]error, n)
	parallel(n, func(i int) {
		so := soul("h1")
		so.PublicKey = []byte(fmt.Sprintf("key-%d", i))
		so.Status = store.SoulPending
		errs[i] = s.CreateSoul(ctx, so)
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("CreateSoul %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case domain.ErrorCode(err) != domain.CodeConflict:
			t.Fatalf("CreateSoul %d: %v, want a conflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no CreateSoul won")
	}
	got, err := s.GetSoul(ctx, "h1")
	must(t, err)
	if want := fmt.Sprintf("key-%d", winner); string(got.PublicKey) != want {
		t.Fatalf("stored key %q, want the winner's %q", got.PublicKey, want)
	}
}

// testJoinTokenUseRace: many souls redeeming a token limited to 3 uses at
// once — exactly 3 succeed and the count stops at 3.
func testJoinTokenUseRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	secret := sha256.Sum256([]byte("limited"))
	must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "j1", SecretHash: secret[:], ExpiresAt: at(time.Hour), MaxUses: 3}))
	const n = 16
	errs := make([]error, n)
	parallel(n, func(i int) {
		_, errs[i] = s.UseJoinToken(ctx, secret[:], base)
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case domain.ErrorCode(err) != domain.CodeNotFound:
			t.Fatalf("use %d: %v, want not found (used up)", i, err)
		}
	}
	if won != 3 {
		t.Fatalf("%d of %d concurrent uses of a 3-use token succeeded", won, n)
	}
	list, err := s.ListJoinTokens(ctx)
	must(t, err)
	if len(list) != 1 || list[0].Uses != 3 {
		t.Fatalf("join tokens after the race: %+v", list)
	}
}

// testAdminDisableRace: admins disabling each other at once — every one
// but one succeeds, and one admin stays enabled.
func testAdminDisableRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 6
	for i := range n {
		must(t, s.CreateArchon(ctx, store.Archon{ID: fmt.Sprintf("a%d", i), Name: fmt.Sprintf("admin%d", i), Role: store.RoleAdmin}))
	}
	for round := range 3 {
		errs := make([]error, n)
		parallel(n, func(i int) {
			errs[i] = s.DisableArchon(ctx, fmt.Sprintf("a%d", i), base)
		})
		refused := 0
		for i, err := range errs {
			switch {
			case err == nil:
			case domain.ErrorCode(err) == domain.CodeConflict:
				refused++
			default:
				t.Fatalf("round %d: disabling a%d: %v", round, i, err)
			}
		}
		as, err := s.ListArchons(ctx)
		must(t, err)
		enabled := 0
		for _, a := range as {
			if a.DisabledAt == nil {
				enabled++
			}
		}
		if refused != 1 || enabled != 1 {
			t.Fatalf("round %d: %d disables refused and %d admins left enabled, want 1 and 1", round, refused, enabled)
		}
		for i := range n {
			must(t, s.EnableArchon(ctx, fmt.Sprintf("a%d", i)))
		}
	}
}
