package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

var historyPageTests = []test{
	{"HistoryPage", testHistoryPage},
}

// testHistoryPage: snapshots below a cursor ID, newest first.
func testHistoryPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	create := newIncarnation(t, s, "redis", "cache", "h1")
	must(t, s.CommitRun(ctx, create.ID, map[string]any{"n": 0}, store.Snapshot{}, at(time.Second)))
	for i, id := range []string{"r1", "r2", "r3"} {
		m := time.Duration(i+1) * time.Minute
		must(t, s.StartRun(ctx, store.Run{ID: id, Incarnation: "cache", Scenario: "x", CreatedAt: at(m)}))
		must(t, s.CommitRun(ctx, id, map[string]any{"n": i + 1}, store.Snapshot{}, at(m+time.Second)))
	}
	first, err := s.ListHistoryPage(ctx, "cache", 0, 2)
	must(t, err)
	if len(first) != 2 || first[0].RunID != "r3" || first[1].RunID != "r2" {
		t.Fatalf("first history page: %+v", first)
	}
	second, err := s.ListHistoryPage(ctx, "cache", first[1].ID, 2)
	must(t, err)
	if len(second) != 2 || second[0].RunID != "r1" || second[1].RunID != create.ID {
		t.Fatalf("second history page: %+v", second)
	}
}
