package healthkeeper

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/health"
)

// afterRun collects the answers to one after-run request.
type afterRun struct {
	mu      sync.Mutex
	want    map[string]bool
	got     map[string][]health.Outcome
	allDone chan struct{}
}

func (w *afterRun) add(sid string, os []health.Outcome) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.want[sid] {
		return
	}
	if _, dup := w.got[sid]; dup {
		return
	}
	w.got[sid] = os
	if len(w.got) == len(w.want) {
		close(w.allDone)
	}
}

// HostHealth is one host's outcomes of the after_runs checks after a run.
type HostHealth struct {
	SID      string           `json:"sid"`
	Outcomes []health.Outcome `json:"outcomes"`
	// Missing says why the host did not answer (not connected, timed out).
	Missing string `json:"missing,omitempty"`
}

// AfterRun asks the members of incarnation connected here to run its
// after_runs checks now and waits for their answers, at most wait. It
// returns nil when the incarnation's service has no after_runs check.
func (m *Manager) AfterRun(ctx context.Context, incarnation, runID string, wait time.Duration) []HostHealth {
	inc, err := m.cfg.Store.GetIncarnation(ctx, incarnation)
	if err != nil {
		return nil
	}
	svc, err := m.service(ctx, inc.Service, inc.Commit)
	if err != nil {
		return nil
	}
	any := false
	for _, hc := range svc.Health {
		any = any || hc.AfterRuns
	}
	if !any {
		return nil
	}
	connected := map[string]bool{}
	for _, sid := range m.cfg.Connected() {
		connected[sid] = true
	}
	w := &afterRun{want: map[string]bool{}, got: map[string][]health.Outcome{}, allDone: make(chan struct{})}
	req, _ := json.Marshal(health.Assignment{RunID: runID, Incarnation: incarnation})
	var missing []HostHealth
	for _, sid := range inc.Members {
		if !connected[sid] {
			missing = append(missing, HostHealth{SID: sid, Missing: "not connected to this keeper"})
			continue
		}
		w.want[sid] = true
	}
	// The run may have changed the checks (a new commit, state, members):
	// the souls get their current set first, on the same ordered stream.
	m.mu.Lock()
	m.services = map[string]*dsl.Service{}
	m.mu.Unlock()
	m.assign(ctx, slices.Sorted(maps.Keys(w.want)), false)
	m.mu.Lock()
	m.waiters[runID] = w
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.waiters, runID)
		m.mu.Unlock()
	}()
	for sid := range w.want {
		if !m.cfg.Send(sid, req) {
			w.mu.Lock()
			delete(w.want, sid)
			w.mu.Unlock()
			missing = append(missing, HostHealth{SID: sid, Missing: "not connected to this keeper"})
		}
	}
	w.mu.Lock()
	if len(w.want) == 0 || len(w.got) == len(w.want) {
		select {
		case <-w.allDone:
		default:
			close(w.allDone)
		}
	}
	w.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.allDone:
	case <-t.C:
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := missing
	for sid := range w.want {
		if os, ok := w.got[sid]; ok {
			out = append(out, HostHealth{SID: sid, Outcomes: os})
		} else {
			out = append(out, HostHealth{SID: sid, Missing: "no answer within " + wait.String()})
		}
	}
	slices.SortFunc(out, func(a, b HostHealth) int {
		if a.SID < b.SID {
			return -1
		}
		if a.SID > b.SID {
			return 1
		}
		return 0
	})
	return out
}

// AfterRunWait is how long AfterRun should wait for an incarnation: the
// longest after_runs timeout plus slack.
func (m *Manager) AfterRunWait(ctx context.Context, incarnation string) time.Duration {
	wait := 5 * time.Second
	inc, err := m.cfg.Store.GetIncarnation(ctx, incarnation)
	if err != nil {
		return wait
	}
	svc, err := m.service(ctx, inc.Service, inc.Commit)
	if err != nil {
		return wait
	}
	longest := time.Duration(0)
	for _, hc := range svc.Health {
		if hc.AfterRuns {
			longest += hc.Timeout // they run one after the other on a soul
		}
	}
	return wait + longest
}
