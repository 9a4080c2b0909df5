package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var relayTests = []test{
	{"Lifecycle", testRelayLifecycle},
	{"ClaimOnce", testRelayClaimOnce},
	{"ListAndPrune", testRelayListPrune},
	{"Reset", testRelayReset},
	{"SoulHolders", testSoulHolders},
}

func relayBatch(from, to, task string, deadline time.Duration) store.RelayBatch {
	return store.RelayBatch{
		FromKeeper: from, ToKeeper: to, RunID: "run-1", Task: task, Souls: 3,
		Work: []byte(`{"works":[{"call":{"module":"core.test.echo"}}]}`), Deadline: at(deadline), CreatedAt: base,
	}
}

func resultsBodies(rows []store.RelayResults) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%d:%s", r.Souls, r.Body))
	}
	return out
}

// testRelayLifecycle walks one batch through its life: created pending,
// claimed once by its addressee, results appended in rows and taken by
// the sender as they come, the final row marking it done, then deleted.
func testRelayLifecycle(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.CreateRelayBatch(ctx, store.RelayBatch{ToKeeper: "k2", Souls: 1})
	wantCode(t, err, domain.CodeInvalid)
	_, err = s.CreateRelayBatch(ctx, store.RelayBatch{FromKeeper: "k1", ToKeeper: "k2"})
	wantCode(t, err, domain.CodeInvalid)

	b := relayBatch("k1", "k2", "t", time.Minute)
	id, err := s.CreateRelayBatch(ctx, b)
	must(t, err)
	if id <= 0 {
		t.Fatalf("CreateRelayBatch id %d", id)
	}
	_, err = s.ClaimRelayBatch(ctx, id, "k3")
	wantCode(t, err, domain.CodeConflict)
	_, err = s.ClaimRelayBatch(ctx, 1<<40, "k2")
	wantNotFound(t, err)
	got, err := s.ClaimRelayBatch(ctx, id, "k2")
	must(t, err)
	want := b
	want.ID, want.Status = id, store.RelayClaimed
	diff(t, "ClaimRelayBatch", got, want)
	_, err = s.ClaimRelayBatch(ctx, id, "k2") // claimed once only
	wantCode(t, err, domain.CodeConflict)

	// Results come in rows; the sender takes what is there, each row once.
	_, err = s.AddRelayResults(ctx, id, []byte("r1"), 2, false, at(time.Second))
	must(t, err)
	tb, rows, err := s.TakeRelayResults(ctx, id)
	must(t, err)
	if tb.Status != store.RelayClaimed {
		t.Fatalf("batch with partial results is %s", tb.Status)
	}
	diff(t, "first take", resultsBodies(rows), []string{"2:r1"})
	_, rows, err = s.TakeRelayResults(ctx, id)
	must(t, err)
	diff(t, "second take", resultsBodies(rows), []string{})

	_, err = s.AddRelayResults(ctx, id, []byte("r2"), 0, false, at(2*time.Second))
	must(t, err)
	fin, err := s.AddRelayResults(ctx, id, []byte("r3"), 1, true, at(3*time.Second))
	must(t, err)
	want.Status, want.Work = store.RelayDone, nil
	fa := at(3 * time.Second)
	want.FinishedAt = &fa
	diff(t, "AddRelayResults final", fin, want)
	_, err = s.AddRelayResults(ctx, id, []byte("late"), 1, false, at(4*time.Second))
	wantCode(t, err, domain.CodeConflict)
	tb, rows, err = s.TakeRelayResults(ctx, id)
	must(t, err)
	if tb.Status != store.RelayDone {
		t.Fatalf("finished batch is %s", tb.Status)
	}
	diff(t, "last take, in order", resultsBodies(rows), []string{"0:r2", "1:r3"})

	del, err := s.DeleteRelayBatch(ctx, id)
	must(t, err)
	diff(t, "DeleteRelayBatch", del, want)
	_, err = s.DeleteRelayBatch(ctx, id)
	wantNotFound(t, err)
	_, err = s.AddRelayResults(ctx, id, []byte("r"), 1, true, at(time.Second))
	wantNotFound(t, err)
	_, _, err = s.TakeRelayResults(ctx, id)
	wantNotFound(t, err)

	// Deleting a batch deletes its results: a new batch starts clean.
	id2, err := s.CreateRelayBatch(ctx, relayBatch("k1", "k2", "t2", time.Minute))
	must(t, err)
	_, err = s.AddRelayResults(ctx, id2, []byte("x"), 1, false, at(time.Second))
	must(t, err)
	_, err = s.DeleteRelayBatch(ctx, id2)
	must(t, err)
	id3, err := s.CreateRelayBatch(ctx, relayBatch("k1", "k2", "t3", time.Minute))
	must(t, err)
	_, err = s.AddRelayResults(ctx, id3, nil, 0, true, at(time.Second)) // done, no row
	must(t, err)
	_, rows, err = s.TakeRelayResults(ctx, id3)
	must(t, err)
	diff(t, "results of a batch done without rows", resultsBodies(rows), []string{})
}

// testRelayClaimOnce claims one batch from many goroutines: exactly one
// wins, the others get conflicts.
func testRelayClaimOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	id, err := s.CreateRelayBatch(ctx, relayBatch("k1", "k2", "t", time.Minute))
	must(t, err)
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		wins, conflict int
	)
	for range 8 {
		wg.Go(func() {
			_, err := s.ClaimRelayBatch(ctx, id, "k2")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case domain.ErrorCode(err) == domain.CodeConflict:
				conflict++
			default:
				t.Errorf("ClaimRelayBatch: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || conflict != 7 {
		t.Fatalf("8 concurrent claims: %d won, %d conflicts", wins, conflict)
	}
}

func testRelayListPrune(t *testing.T, s store.Store) {
	ctx := t.Context()
	ids := map[string]int64{}
	for _, b := range []store.RelayBatch{
		relayBatch("k1", "k2", "a", time.Minute),
		relayBatch("k3", "k1", "b", time.Minute),
		relayBatch("k1", "k3", "c", 2*time.Minute),
		relayBatch("k3", "k2", "d", 2*time.Minute),
	} {
		id, err := s.CreateRelayBatch(ctx, b)
		must(t, err)
		ids[b.Task] = id
	}
	_, err := s.ClaimRelayBatch(ctx, ids["d"], "k2")
	must(t, err)
	_, err = s.AddRelayResults(ctx, ids["c"], []byte(`r`), 3, true, at(time.Second))
	must(t, err)
	_, err = s.AddRelayResults(ctx, ids["a"], []byte(`r`), 1, false, at(time.Second))
	must(t, err)

	tasks := func(f store.RelayFilter) []string {
		t.Helper()
		list, err := s.ListRelayBatches(ctx, f)
		must(t, err)
		out := []string{}
		for _, b := range list {
			if b.Work != nil || b.Fallback != nil {
				t.Fatalf("ListRelayBatches returned payloads: %+v", b)
			}
			out = append(out, b.Task)
		}
		return out
	}
	diff(t, "all", tasks(store.RelayFilter{}), []string{"a", "b", "c", "d"})
	diff(t, "to k2", tasks(store.RelayFilter{ToKeeper: "k2"}), []string{"a", "d"})
	diff(t, "to k2 pending", tasks(store.RelayFilter{ToKeeper: "k2", Status: store.RelayPending}), []string{"a"})
	diff(t, "from k1 done", tasks(store.RelayFilter{FromKeeper: "k1", Status: store.RelayDone}), []string{"c"})
	diff(t, "from k1", tasks(store.RelayFilter{FromKeeper: "k1"}), []string{"a", "c"})

	n, err := s.PruneRelays(ctx, at(90*time.Second))
	must(t, err)
	if n != 2 {
		t.Fatalf("PruneRelays removed %d batches, want 2", n)
	}
	diff(t, "after prune", tasks(store.RelayFilter{}), []string{"c", "d"})
	_, _, err = s.TakeRelayResults(ctx, ids["a"])
	wantNotFound(t, err)
}

// testRelayReset restarts keeper k2: what was addressed to it and not done
// is finished with the fallback, what it sent is gone with its results,
// the rest stays.
func testRelayReset(t *testing.T, s store.Store) {
	ctx := t.Context()
	ids := map[string]int64{}
	for _, b := range []store.RelayBatch{
		relayBatch("k1", "k2", "pending-to-k2", time.Minute),
		relayBatch("k1", "k2", "claimed-to-k2", time.Minute),
		relayBatch("k1", "k2", "done-to-k2", time.Minute),
		relayBatch("k2", "k1", "from-k2", time.Minute),
		relayBatch("k1", "k3", "elsewhere", time.Minute),
	} {
		id, err := s.CreateRelayBatch(ctx, b)
		must(t, err)
		ids[b.Task] = id
	}
	_, err := s.ClaimRelayBatch(ctx, ids["claimed-to-k2"], "k2")
	must(t, err)
	_, err = s.AddRelayResults(ctx, ids["claimed-to-k2"], []byte("part"), 1, false, at(time.Second))
	must(t, err)
	_, err = s.AddRelayResults(ctx, ids["done-to-k2"], []byte(`all`), 3, true, at(time.Second))
	must(t, err)
	_, err = s.AddRelayResults(ctx, ids["from-k2"], []byte(`x`), 1, false, at(time.Second))
	must(t, err)

	lost := []byte(`{"unreachable":true}`)
	reset, err := s.ResetRelays(ctx, "k2", lost, at(time.Minute))
	must(t, err)
	var got []string
	for _, b := range reset {
		if b.Status != store.RelayDone || b.FinishedAt == nil || !b.FinishedAt.Equal(at(time.Minute)) {
			t.Errorf("reset batch %s: %+v", b.Task, b)
		}
		got = append(got, b.Task)
	}
	diff(t, "reset batches", got, []string{"pending-to-k2", "claimed-to-k2"})
	// The sender gets the results written before the reset, then the
	// fallback for the rest.
	tb, rows, err := s.TakeRelayResults(ctx, ids["claimed-to-k2"])
	must(t, err)
	if tb.Status != store.RelayDone || string(tb.Fallback) != string(lost) {
		t.Errorf("reset batch read back: %+v", tb)
	}
	diff(t, "results kept by the reset", resultsBodies(rows), []string{"1:part"})
	_, _, err = s.TakeRelayResults(ctx, ids["from-k2"])
	wantNotFound(t, err)
	done, rows, err := s.TakeRelayResults(ctx, ids["done-to-k2"])
	must(t, err)
	if done.Fallback != nil || len(rows) != 1 {
		t.Errorf("a done batch was reset: %+v, %d rows", done, len(rows))
	}
	list, err := s.ListRelayBatches(ctx, store.RelayFilter{ToKeeper: "k3", Status: store.RelayPending})
	must(t, err)
	if len(list) != 1 {
		t.Errorf("another keeper's batches changed: %+v", list)
	}
	reset, err = s.ResetRelays(ctx, "k9", lost, at(time.Minute))
	must(t, err)
	if len(reset) != 0 {
		t.Errorf("resetting a keeper with no batches: %+v", reset)
	}
}

// testSoulHolders reads the keepers holding many souls in one call, and
// counts the connected souls by keeper.
func testSoulHolders(t *testing.T, s store.Store) {
	ctx := t.Context()
	var sids []string
	for i := range 1200 { // more than one placeholder chunk would hold
		sid := fmt.Sprintf("h%04d", i)
		sids = append(sids, sid)
		so := store.Soul{SID: sid, PublicKey: []byte("key"), Status: store.SoulConnected, KeeperID: fmt.Sprintf("k%d", i%3), LastSeen: base}
		switch {
		case i == 7:
			so.Status, so.KeeperID = store.SoulDisconnected, ""
		case i == 8:
			so.Status = store.SoulPending
		}
		must(t, s.UpsertSoul(ctx, so))
	}
	got, err := s.SoulHolders(ctx, append(sids, "unknown", `quote"d`))
	must(t, err)
	if len(got) != 1198 || got["h0000"] != "k0" || got["h0001"] != "k1" || got["h1199"] != "k2" || got["h0007"] != "" || got["h0008"] != "" {
		t.Fatalf("SoulHolders: %d holders, h0000=%q h0001=%q h1199=%q h0007=%q h0008=%q",
			len(got), got["h0000"], got["h0001"], got["h1199"], got["h0007"], got["h0008"])
	}
	few, err := s.SoulHolders(ctx, []string{"h0004", "h0005"})
	must(t, err)
	diff(t, "two souls", few, map[string]string{"h0004": "k1", "h0005": "k2"})
	none, err := s.SoulHolders(ctx, nil)
	must(t, err)
	diff(t, "no souls", none, map[string]string{})

	counts, err := s.CountSoulsByKeeper(ctx)
	must(t, err)
	diff(t, "CountSoulsByKeeper", counts, map[string]int{"k0": 400, "k1": 399, "k2": 399})
}
