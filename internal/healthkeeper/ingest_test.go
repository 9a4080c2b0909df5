package healthkeeper

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/health"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

type noServices struct{}

func (noServices) Open(context.Context, string, string) (*dsl.Service, error) {
	return &dsl.Service{}, nil
}

// TestFlappingBounded: thousands of transitions of one check on one host
// are stored one by one only up to the history's rate limit; the rest are
// counted in the state's Flaps, and the writes are batched (one flush, a
// few transactions), while every transition is still published.
func TestFlappingBounded(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateService(ctx, store.Service{Name: "s", Git: "x", Ref: "main", Commit: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateIncarnation(ctx, store.Incarnation{Name: "i", Service: "s", Covens: []string{"c"}, Members: []string{"h1"}}, store.Run{ID: "r1", Scenario: "create"}); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Store: st, Services: noServices{}, Send: func(string, []byte) bool { return true }, Connected: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	events, stop := m.Subscribe("i")
	defer stop()
	const flips = 2000
	now := time.Now()
	for i := range flips + 1 {
		status := health.OK
		if i%2 == 1 {
			status = health.Critical
		}
		b, _ := json.Marshal(health.Report{Changes: []health.Outcome{{Incarnation: "i", Check: "c", Status: status, Since: now, CheckedAt: now}}})
		m.OnHealth("h1", b)
	}
	m.flush(ctx)
	trans, err := st.ListHealthTransitions(ctx, "i", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(trans) != historyLimit {
		t.Errorf("stored %d transitions, want the rate limit %d", len(trans), historyLimit)
	}
	states, err := st.ListHealthStates(ctx, "i")
	if err != nil || len(states) != 1 {
		t.Fatalf("states: %+v %v", states, err)
	}
	if states[0].Status != health.OK || states[0].Flaps != flips-historyLimit {
		t.Errorf("state %s with %d flaps, want OK with %d", states[0].Status, states[0].Flaps, flips-historyLimit)
	}
	if got := len(events); got != min(flips, subscriberBuffer) {
		t.Errorf("%d events buffered, want %d (every transition published, the subscriber's buffer bounds it)", got, min(flips, subscriberBuffer))
	}
}
