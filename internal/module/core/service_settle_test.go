package core

import (
	"context"
	"testing"
	"time"
)

// lateManager is a service whose status shows running only from the
// upAfter-th status call on, like a daemon that writes its pidfile after
// its init script has returned.
type lateManager struct {
	calls, upAfter int
}

func (m *lateManager) kind() string { return "fake" }
func (m *lateManager) active(context.Context, string) (bool, error) {
	m.calls++
	return m.upAfter > 0 && m.calls >= m.upAfter, nil
}
func (m *lateManager) action(context.Context, string, string) error  { return nil }
func (m *lateManager) enabled(context.Context, string) (bool, error) { return true, nil }
func (m *lateManager) enable(context.Context, string) error          { return nil }
func (m *lateManager) disable(context.Context, string) error         { return nil }
func (m *lateManager) prepare(context.Context, string, bool) (bool, error) {
	return false, nil
}
func (m *lateManager) masked(context.Context, string) (bool, error) { return false, nil }
func (m *lateManager) why(context.Context, string) string           { return "" }

var _ serviceManager = (*lateManager)(nil)

func TestSettle(t *testing.T) {
	ctx := context.Background()
	m := &lateManager{upAfter: 3}
	up, err := settle(ctx, m, "late", true, 5*time.Second)
	if err != nil || !up || m.calls != 3 {
		t.Errorf("late starter: up %v, err %v after %d status calls; want up after 3", up, err, m.calls)
	}

	m = &lateManager{}
	start := time.Now()
	up, err = settle(ctx, m, "never", true, 200*time.Millisecond)
	if err != nil || up {
		t.Errorf("never up: up %v, err %v; want down", up, err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 2*time.Second {
		t.Errorf("never up: gave up after %v, want about 200ms", took)
	}

	m = &lateManager{upAfter: 1}
	if up, _ := settle(ctx, m, "stopping", false, 200*time.Millisecond); !up || m.calls < 2 {
		t.Errorf("waiting for stopped: up %v after %d calls; want the last state (running) after polling", up, m.calls)
	}
}
