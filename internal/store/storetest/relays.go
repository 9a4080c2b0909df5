package storetest

import (
	"bytes"
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
}

func relayWork(from, to, sid string, deadline time.Duration) store.RelayWork {
	return store.RelayWork{
		FromKeeper: from, ToKeeper: to, SID: sid, RunID: "run-1", TaskID: "run-1/1/" + sid + "/1",
		Work: []byte(`{"call":{"module":"core.test.echo"}}`), Deadline: at(deadline), CreatedAt: base,
	}
}

func testRelayLifecycle(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.CreateRelay(ctx, store.RelayWork{ToKeeper: "k2", SID: "h1"})
	wantCode(t, err, domain.CodeInvalid)

	// A payload far beyond NOTIFY's 8000 bytes round-trips unchanged,
	// whatever its bytes.
	big := bytes.Repeat([]byte("0123456789abcdef\x00\xff"), 64<<10)
	w := relayWork("k1", "k2", "h1", time.Minute)
	w.Work = big
	id, err := s.CreateRelay(ctx, w)
	must(t, err)
	if id <= 0 {
		t.Fatalf("CreateRelay id %d", id)
	}
	id2, err := s.CreateRelay(ctx, relayWork("k1", "k2", "h2", time.Minute))
	must(t, err)
	if id2 <= id {
		t.Fatalf("ids are not increasing: %d then %d", id, id2)
	}

	_, err = s.ClaimRelay(ctx, id, "k3")
	wantConflict(t, err)
	_, err = s.ClaimRelay(ctx, 1<<40, "k2")
	wantNotFound(t, err)
	got, err := s.ClaimRelay(ctx, id, "k2")
	must(t, err)
	want := w
	want.ID, want.Status = id, store.RelayClaimed
	diff(t, "ClaimRelay", got, want)
	_, err = s.ClaimRelay(ctx, id, "k2") // claimed once only
	wantConflict(t, err)

	result := []byte(`{"changed":true,"rc":0}`)
	fin, err := s.FinishRelay(ctx, id, result, at(time.Second))
	must(t, err)
	want.Status, want.Result, want.FinishedAt, want.Work = store.RelayDone, result, ptr(at(time.Second)), nil
	diff(t, "FinishRelay", fin, want)
	_, err = s.FinishRelay(ctx, id, result, at(2*time.Second))
	wantConflict(t, err)

	// An unclaimed row can be finished too (its addressee answers without
	// claiming when it knows the answer, e.g. at its restart).
	_, err = s.FinishRelay(ctx, id2, []byte(`{}`), at(time.Second))
	must(t, err)

	took, err := s.TakeRelay(ctx, id)
	must(t, err)
	diff(t, "TakeRelay", took, want)
	_, err = s.TakeRelay(ctx, id)
	wantNotFound(t, err)
	_, err = s.FinishRelay(ctx, id, result, at(time.Second))
	wantNotFound(t, err)
	_, err = s.ClaimRelay(ctx, id, "k2")
	wantNotFound(t, err)
}

// testRelayClaimOnce claims one row from many goroutines: exactly one wins,
// the others get conflicts.
func testRelayClaimOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	id, err := s.CreateRelay(ctx, relayWork("k1", "k2", "h1", time.Minute))
	must(t, err)
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		wins, conflict int
	)
	for range 8 {
		wg.Go(func() {
			_, err := s.ClaimRelay(ctx, id, "k2")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case domain.ErrorCode(err) == domain.CodeConflict:
				conflict++
			default:
				t.Errorf("ClaimRelay: %v", err)
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
	for _, w := range []store.RelayWork{
		relayWork("k1", "k2", "a", time.Minute),
		relayWork("k2", "k1", "b", 2*time.Minute),
		relayWork("k1", "k3", "c", time.Hour),
		relayWork("k3", "k2", "d", time.Hour),
	} {
		id, err := s.CreateRelay(ctx, w)
		must(t, err)
		ids[w.SID] = id
	}
	_, err := s.ClaimRelay(ctx, ids["d"], "k2")
	must(t, err)
	_, err = s.FinishRelay(ctx, ids["c"], []byte(`{}`), at(time.Second))
	must(t, err)

	sids := func(f store.RelayFilter) []string {
		t.Helper()
		list, err := s.ListRelays(ctx, f)
		must(t, err)
		out := []string{}
		for _, w := range list {
			if w.Work != nil || w.Result != nil {
				t.Fatalf("ListRelays returned payloads: %+v", w)
			}
			out = append(out, w.SID)
		}
		return out
	}
	diff(t, "all", sids(store.RelayFilter{}), []string{"a", "b", "c", "d"})
	diff(t, "to k2", sids(store.RelayFilter{ToKeeper: "k2"}), []string{"a", "d"})
	diff(t, "to k2 pending", sids(store.RelayFilter{ToKeeper: "k2", Status: store.RelayPending}), []string{"a"})
	diff(t, "from k1 done", sids(store.RelayFilter{FromKeeper: "k1", Status: store.RelayDone}), []string{"c"})
	diff(t, "from k1", sids(store.RelayFilter{FromKeeper: "k1"}), []string{"a", "c"})

	n, err := s.PruneRelays(ctx, at(90*time.Second))
	must(t, err)
	if n != 1 {
		t.Fatalf("PruneRelays removed %d rows, want 1", n)
	}
	diff(t, "after prune", sids(store.RelayFilter{}), []string{"b", "c", "d"})
}

// testRelayReset restarts keeper k2: what was addressed to it and not done
// is finished with the given result, what it sent is gone, the rest stays.
func testRelayReset(t *testing.T, s store.Store) {
	ctx := t.Context()
	ids := map[string]int64{}
	for _, w := range []store.RelayWork{
		relayWork("k1", "k2", "pending-to-k2", time.Minute),
		relayWork("k1", "k2", "claimed-to-k2", time.Minute),
		relayWork("k1", "k2", "done-to-k2", time.Minute),
		relayWork("k2", "k1", "from-k2", time.Minute),
		relayWork("k1", "k3", "elsewhere", time.Minute),
	} {
		id, err := s.CreateRelay(ctx, w)
		must(t, err)
		ids[w.SID] = id
	}
	_, err := s.ClaimRelay(ctx, ids["claimed-to-k2"], "k2")
	must(t, err)
	_, err = s.FinishRelay(ctx, ids["done-to-k2"], []byte(`{"rc":0}`), at(time.Second))
	must(t, err)

	lost := []byte(`{"unreachable":true}`)
	reset, err := s.ResetRelays(ctx, "k2", lost, at(time.Minute))
	must(t, err)
	var got []string
	for _, w := range reset {
		if w.Status != store.RelayDone || !bytes.Equal(w.Result, lost) || w.FinishedAt == nil || !w.FinishedAt.Equal(at(time.Minute)) {
			t.Errorf("reset row %s: %+v", w.SID, w)
		}
		got = append(got, w.SID)
	}
	diff(t, "reset rows", got, []string{"pending-to-k2", "claimed-to-k2"})
	_, err = s.TakeRelay(ctx, ids["from-k2"])
	wantNotFound(t, err)
	done, err := s.TakeRelay(ctx, ids["done-to-k2"])
	must(t, err)
	if string(done.Result) != `{"rc":0}` {
		t.Errorf("a done row was reset: %s", done.Result)
	}
	list, err := s.ListRelays(ctx, store.RelayFilter{ToKeeper: "k3", Status: store.RelayPending})
	must(t, err)
	if len(list) != 1 {
		t.Errorf("another keeper's rows changed: %+v", list)
	}
	reset, err = s.ResetRelays(ctx, "k9", lost, at(time.Minute))
	must(t, err)
	if len(reset) != 0 {
		t.Errorf("resetting a keeper with no rows: %+v", reset)
	}
}
