package dispatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
)

// Sim is the simulated soul transport of scenario tests (SPEC §8.7): no
// souls, no hosts. Each host answers module calls from Stubs (the first
// stub matching the host, the module and the task wins; a host with no
// matching stub answers ok, unchanged). A host marked Down is not
// connected, so everything dispatched to it is unreachable at once, as with
// the real gateway. Destiny bundles are run by RunBundle, whose module calls
// are answered from the same stubs.
//
// Sim is safe for concurrent use; it records every request (Calls) so tests
// can assert what was sent where.
type Sim struct {
	// RunBundle runs a destiny bundle on a simulated host; call answers the
	// bundle's module calls from the stubs. The scenario test runner plugs
	// in executor.RunBundle (dispatch cannot import the executor). nil
	// fails every bundle.
	RunBundle SimBundleFunc

	mu     sync.Mutex
	hosts  map[string]*SimHost
	stubs  []Stub
	served map[servedKey]int
	calls  []SimCall
}

// SimBundleFunc runs bundle b for host sid with facts; call answers one
// module call of the destiny's tasks.
type SimBundleFunc func(ctx context.Context, b *Bundle, facts map[string]any, check bool,
	call func(ctx context.Context, c Call, check bool, timeout time.Duration) domain.Result) domain.Result

// SimHost is one simulated host.
type SimHost struct {
	SID   string
	Facts map[string]any
	// Down is a disconnected soul: every request is unreachable at once.
	Down bool
}

// Stub is a canned answer. Empty Module, Task or Hosts match everything.
type Stub struct {
	Module string   // module name, e.g. "core.exec.run"
	Task   string   // name of the scenario task the call comes from
	Hosts  []string // SIDs; nil = every host
	// Results are the successive answers of a host to matching calls (a
	// retry sees the next one); the last one repeats. None = ok,
	// unchanged.
	Results []domain.Result
	// Unreachable: the host drops the connection instead of answering.
	Unreachable bool
	// Timeout: the host stays connected but exceeds the task's timeout;
	// the call fails at once as timed out (simulated time).
	Timeout bool
	// Hang: the host never answers; the call ends when its timeout expires
	// (failed) or the run is cancelled (real time).
	Hang bool
	// Wait, when set, holds the answer until Wait is closed (or the run is
	// cancelled): a run kept in flight while a test changes the world.
	Wait <-chan struct{}
}

// SimCall records one module call or bundle answered by Sim.
type SimCall struct {
	SID     string
	Task    string
	Module  string // "" for a bundle
	Destiny string // the bundle's destiny
	Check   bool
	Params  map[string]any
	Input   map[string]any // the bundle's input
	// Call is the module call as it would go to the soul (nil for a
	// bundle): its files, template data and key order.
	Call *Call
}

type servedKey struct {
	stub int
	sid  string
}

var _ Dispatcher = (*Sim)(nil)

// NewSim returns a Sim with the given hosts and stubs.
func NewSim(hosts []SimHost, stubs []Stub) *Sim {
	s := &Sim{hosts: map[string]*SimHost{}, served: map[servedKey]int{}, stubs: slices.Clone(stubs)}
	for _, h := range hosts {
		s.hosts[h.SID] = &h
	}
	return s
}

// AddHost adds (or replaces) a simulated host.
func (s *Sim) AddHost(h SimHost) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[h.SID] = &h
}

// SetDown marks a host disconnected (or connected again).
func (s *Sim) SetDown(sid string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.hosts[sid]; ok {
		h.Down = down
	}
}

// SetStubs replaces the stubs (and restarts their answer sequences), for
// a next run against the same hosts.
func (s *Sim) SetStubs(stubs []Stub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stubs = slices.Clone(stubs)
	s.served = map[servedKey]int{}
}

// Calls returns the requests answered so far, in the order they arrived.
func (s *Sim) Calls() []SimCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Dispatch answers every request in parallel and returns one result per SID.
func (s *Sim) Dispatch(ctx context.Context, reqs []Request, onResult func(string, domain.Result)) map[string]domain.Result {
	out := make(map[string]domain.Result, len(reqs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, req := range reqs {
		wg.Go(func() {
			r := s.answer(ctx, req)
			mu.Lock()
			out[req.SID] = r
			if onResult != nil {
				onResult(req.SID, r)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (s *Sim) answer(ctx context.Context, req Request) domain.Result {
	start := time.Now()
	s.mu.Lock()
	h, ok := s.hosts[req.SID]
	down := ok && h.Down
	var facts map[string]any
	if ok {
		facts = maps.Clone(h.Facts)
	}
	s.mu.Unlock()
	switch {
	case !ok:
		return unreachableResult(fmt.Sprintf("soul %s is not a simulated host", req.SID))
	case down:
		return unreachableResult(fmt.Sprintf("soul %s is not connected", req.SID))
	}
	w := req.Work
	if w.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.Timeout)
		defer cancel()
	}
	var r domain.Result
	switch {
	case w.Call != nil:
		r = s.call(ctx, req.SID, w.Task, *w.Call, w.Check, w.Timeout)
	case w.Bundle != nil:
		r = s.bundle(ctx, req.SID, w, facts)
	default:
		r = domain.Result{Failed: true, RC: -1, Msg: "work carries neither a module call nor a destiny bundle"}
	}
	if r.DurationMS == 0 {
		r.DurationMS = time.Since(start).Milliseconds()
	}
	return r
}

func (s *Sim) bundle(ctx context.Context, sid string, w Work, facts map[string]any) domain.Result {
	s.record(SimCall{SID: sid, Task: w.Task, Destiny: w.Bundle.Destiny, Check: w.Check, Input: w.Bundle.Input})
	if s.RunBundle == nil {
		return domain.Result{Failed: true, RC: -1, Msg: "the simulated transport cannot run destiny bundles"}
	}
	if facts == nil {
		facts = map[string]any{}
	}
	facts["sid"] = sid
	var mu sync.Mutex
	lost := ""
	call := func(ctx context.Context, c Call, check bool, timeout time.Duration) domain.Result {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		r := s.call(ctx, sid, w.Task, c, check, timeout)
		if r.Unreachable {
			mu.Lock()
			lost = r.Msg
			mu.Unlock()
		}
		return r
	}
	r := s.RunBundle(ctx, w.Bundle, facts, w.Check, call)
	mu.Lock()
	defer mu.Unlock()
	if lost != "" {
		// The connection dropped in the middle of the bundle: the host is
		// unreachable, whatever the destiny made of it.
		return unreachableResult(lost)
	}
	return r
}

// call answers one module call of host sid from the stubs.
func (s *Sim) call(ctx context.Context, sid, task string, c Call, check bool, timeout time.Duration) domain.Result {
	s.record(SimCall{SID: sid, Task: task, Module: c.Module, Check: check, Params: c.Params, Call: &c})
	st, n, ok := s.match(sid, task, c.Module)
	if !ok {
		return domain.Result{}
	}
	if st.Wait != nil {
		select {
		case <-st.Wait:
		case <-ctx.Done():
			return domain.Result{Failed: true, RC: -1, Abandoned: true, Msg: "cancelled: " + context.Cause(ctx).Error()}
		}
	}
	switch {
	case st.Unreachable:
		return unreachableResult(fmt.Sprintf("soul %s dropped the connection", sid))
	case st.Timeout:
		return domain.Result{Failed: true, RC: -1, Abandoned: true, Msg: fmt.Sprintf("timed out after %s", timeout)}
	case st.Hang:
		<-ctx.Done()
		if ctx.Err() == context.DeadlineExceeded {
			return domain.Result{Failed: true, RC: -1, Abandoned: true, Msg: fmt.Sprintf("timed out after %s", timeout)}
		}
		return domain.Result{Failed: true, RC: -1, Abandoned: true, Msg: "cancelled: " + context.Cause(ctx).Error()}
	case len(st.Results) == 0:
		return domain.Result{}
	}
	return cloneResult(st.Results[min(n, len(st.Results)-1)])
}

// match finds the first stub for (sid, task, module) and counts its use
// by sid; n is how many times it answered sid before.
func (s *Sim) match(sid, task, mod string) (Stub, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range s.stubs {
		if st.Module != "" && st.Module != mod {
			continue
		}
		if st.Task != "" && st.Task != task {
			continue
		}
		if st.Hosts != nil && !slices.Contains(st.Hosts, sid) {
			continue
		}
		k := servedKey{i, sid}
		n := s.served[k]
		s.served[k] = n + 1
		return st, n, true
	}
	return Stub{}, 0, false
}

func (s *Sim) record(c SimCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

// cloneResult copies the maps of a canned result so callers may not alias
// the stub.
func cloneResult(r domain.Result) domain.Result {
	r.Data = maps.Clone(r.Data)
	r.Output = maps.Clone(r.Output)
	r.Results = slices.Clone(r.Results)
	r.Tasks = slices.Clone(r.Tasks)
	return r
}

func unreachableResult(msg string) domain.Result {
	return domain.Result{Unreachable: true, RC: -1, Msg: msg}
}
