package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var keeperTests = []test{
	{"Lifecycle", testKeeperLifecycle},
	{"DeleteOnce", testKeeperDeleteOnce},
	{"MoveRequests", testKeeperMoveRequests},
}

// A move request is taken once; a newer one replaces one not taken yet.
func testKeeperMoveRequests(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, ok, err := s.TakeKeeperMove(ctx, "k1"); err != nil || ok {
		t.Fatalf("TakeKeeperMove with none = %v, %v", ok, err)
	}
	must(t, s.RequestKeeperMove(ctx, store.KeeperMove{KeeperID: "k1", Souls: 5, By: "k2", RequestedAt: base}))
	drain := store.KeeperMove{KeeperID: "k1", Drain: true, By: "archon:ops", RequestedAt: at(time.Second)}
	must(t, s.RequestKeeperMove(ctx, drain))
	must(t, s.RequestKeeperMove(ctx, store.KeeperMove{KeeperID: "k2", Souls: 1, By: "k1", RequestedAt: base}))
	got, ok, err := s.TakeKeeperMove(ctx, "k1")
	must(t, err)
	if !ok {
		t.Fatal("TakeKeeperMove found no request")
	}
	if diff := cmp.Diff(drain, got); diff != "" {
		t.Errorf("TakeKeeperMove (-want +got):\n%s", diff)
	}
	if _, ok, err := s.TakeKeeperMove(ctx, "k1"); err != nil || ok {
		t.Fatalf("TakeKeeperMove again = %v, %v; want nothing left", ok, err)
	}
	if got, ok, err := s.TakeKeeperMove(ctx, "k2"); err != nil || !ok || got.Souls != 1 || got.Drain {
		t.Fatalf("TakeKeeperMove k2 = %+v, %v, %v", got, ok, err)
	}
}

func testKeeperLifecycle(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetKeeper(ctx, "k1")
	wantCode(t, err, domain.CodeNotFound)
	wantCode(t, s.KeeperHeartbeat(ctx, "k1", base), domain.CodeNotFound)

	k1 := store.KeeperRecord{ID: "k1", Address: "10.0.0.1:8080", Version: "v1", CheckerTokenID: "tok-1", StartedAt: base}
	must(t, s.RegisterKeeper(ctx, k1))
	must(t, s.RegisterKeeper(ctx, store.KeeperRecord{ID: "k0", StartedAt: at(time.Second), HeartbeatAt: at(2 * time.Second)}))
	got, err := s.GetKeeper(ctx, "k1")
	must(t, err)
	k1.HeartbeatAt = base // zero HeartbeatAt is StartedAt
	if diff := cmp.Diff(k1, got); diff != "" {
		t.Errorf("GetKeeper (-want +got):\n%s", diff)
	}
	must(t, s.KeeperHeartbeat(ctx, "k1", at(5*time.Second)))
	// Registering again (a restart) replaces every field.
	k1b := store.KeeperRecord{ID: "k1", Address: "10.0.0.1:9090", CheckerTokenID: "tok-2", StartedAt: at(time.Minute), HeartbeatAt: at(time.Minute)}
	must(t, s.RegisterKeeper(ctx, k1b))
	all, err := s.ListKeepers(ctx)
	must(t, err)
	if len(all) != 2 || all[0].ID != "k0" || all[1].ID != "k1" {
		t.Fatalf("ListKeepers: %+v", all)
	}
	if diff := cmp.Diff(k1b, all[1]); diff != "" {
		t.Errorf("k1 after re-registering (-want +got):\n%s", diff)
	}
	// A fresh heartbeat protects a row from a stale-only delete.
	if ok, err := s.DeleteKeeper(ctx, "k1", at(time.Minute)); err != nil || ok {
		t.Fatalf("DeleteKeeper of a fresh keeper: %v, %v", ok, err)
	}
	if ok, err := s.DeleteKeeper(ctx, "k1", at(time.Minute+time.Millisecond)); err != nil || !ok {
		t.Fatalf("DeleteKeeper of a stale keeper: %v, %v", ok, err)
	}
	wantCode(t, s.KeeperHeartbeat(ctx, "k1", at(2*time.Minute)), domain.CodeNotFound)
	if ok, err := s.DeleteKeeper(ctx, "k0", time.Time{}); err != nil || !ok {
		t.Fatalf("unconditional DeleteKeeper: %v, %v", ok, err)
	}
	if all, _ := s.ListKeepers(ctx); len(all) != 0 {
		t.Fatalf("keepers left: %+v", all)
	}
}

// Of keepers cleaning up after a dead one at once, exactly one deletes its
// row (and so does the cleanup).
func testKeeperDeleteOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.RegisterKeeper(ctx, store.KeeperRecord{ID: "dead", StartedAt: base}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Go(func() {
			ok, err := s.DeleteKeeper(ctx, "dead", at(time.Minute))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d deletes won, want 1", wins)
	}
}
