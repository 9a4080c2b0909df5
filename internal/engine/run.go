package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/store"
)

// host is what the run knows of one member.
type host struct {
	sid    string
	covens []string
	facts  map[string]any
}

// runner executes one run. Its mutable state is guarded by mu: the hosts of
// a wave are worked on concurrently.
type runner struct {
	e     *Engine
	run   store.Run
	inc   store.Incarnation
	svc   *dsl.Service
	sc    *dsl.Scenario
	env   *expr.Env
	live  *liveRun
	input map[string]any

	members []string // sorted SIDs
	hosts   map[string]*host
	// factsRead is set when the scenario can read soulprints (readsFacts):
	// only then are the members' soulprints read and decoded.
	factsRead bool
	base      expr.Activation
	idx       *taskIndex
	seq       map[*dsl.Task]int    // idx.seq
	keys      map[*dsl.Task]string // idx.keys: pending-trigger key of each onchanges task
	rec       *recorder
	resume    *resumePlan // set when the run resumes another

	// canaryBase is base with canaries for secrets (nil: no secrets).
	canaryBase *expr.Activation
	// secretState marks the state keys opened from the incarnation's
	// sealed state (their values are secrets of the run).
	secretState map[string]bool
	canaryRegs  canaryCache

	mu          sync.Mutex
	secrets     []string
	results     map[*dsl.Task]map[string]domain.Result
	attempts    map[*dsl.Task]map[string]int64 // last attempt dispatched, per task and host
	unreachable map[string]string              // sid → first task it was lost in
	failure     string                         // first failure; "" while nothing failed
	pending     map[string]map[string]bool
	owedSince   map[string]map[string]string // trigger key → sid → the run that left it
	varsErr     map[string]string            // sid → why the scenario's vars_files did not resolve there
}

func (e *Engine) newRunner(run store.Run, inc store.Incarnation, svc *dsl.Service, sc *dsl.Scenario, input map[string]any) *runner {
	r := &runner{
		e: e, run: run, inc: inc, svc: svc, sc: sc, input: input,
		env:         expr.ForKind(expr.KindScenario),
		secrets:     secretValues(sc, input),
		results:     map[*dsl.Task]map[string]domain.Result{},
		attempts:    map[*dsl.Task]map[string]int64{},
		unreachable: map[string]string{},
		pending:     map[string]map[string]bool{},
		owedSince:   map[string]map[string]string{},
		idx:         indexScenario(sc),
	}
	r.seq, r.keys = r.idx.seq, r.idx.keys
	r.rec = newRecorder(context.Background(), e.cfg.Store, e.log, run.ID, r.emitRows, e.giveUp)
	return r
}

// TriggerKey is the Task of the pending triggers of handler t: its name
// when the name is unique in the scenario (stable when tasks are added
// around it by a later commit), else its path.
func TriggerKey(sc *dsl.Scenario, t *dsl.Task) string {
	if t.Name == "" {
		return t.Path
	}
	n := 0
	var walk func([]*dsl.Task)
	walk = func(ts []*dsl.Task) {
		for _, x := range ts {
			if x.Name == t.Name {
				n++
			}
			walk(x.Block)
		}
	}
	walk(sc.Tasks)
	if n == 1 {
		return t.Name
	}
	return t.Path
}

// execute runs the scenario and ends the run; it returns the final event.
func (r *runner) execute(ctx context.Context) (final Event) {
	started := time.Now()
	ctx, span := r.runSpan(ctx)
	defer func() { endRunSpan(span, final.Status) }()
	r.rec.start()
	defer r.rec.close()
	r.e.cfg.Metrics.runStarted()
	defer func() { r.e.cfg.Metrics.runFinished(final.Status, r.run.Check, time.Since(started)) }()
	if f := r.e.cfg.OnRunEnd; f != nil {
		defer func() { f(r.inc.Name, r.run.ID, final.Status) }()
	}
	// Finishing writes must happen even when the run was cancelled.
	bg := context.WithoutCancel(ctx)
	log := r.e.log.With("apply_id", r.run.ID, "incarnation", r.inc.Name, "scenario", r.sc.Name)
	// Every run's end is logged, check and drift runs included (SPEC §14).
	defer func() {
		log.InfoContext(bg, "run ended", "status", final.Status, "check", r.run.Check, "drift", r.run.Drift,
			"duration", time.Since(started).Round(time.Millisecond))
	}()
	if err := r.e.cfg.Store.SetRunStatus(ctx, r.run.ID, store.RunRunning, r.e.now()); err != nil {
		// Aborted meanwhile (another keeper's recovery) or the store is
		// down: nothing ran, so there is nothing to lock further.
		if ctx.Err() == nil {
			log.ErrorContext(bg, "run could not start", "err", err)
		}
		return r.endBeforeTasks(ctx, "the run could not start: "+err.Error())
	}
	r.emit(Event{Type: EventRun, Status: store.RunRunning})
	log.InfoContext(ctx, "run started", "check", r.run.Check, "members", len(r.inc.Members))
	if err := r.prepare(ctx); err != nil {
		return r.endBeforeTasks(ctx, err.Error())
	}
	if r.resume != nil {
		r.walkResumed(ctx)
	} else {
		r.walk(ctx, r.sc.Tasks, r.topScope())
	}
	// Every result is stored before the run settles, commits or ends.
	r.rec.flush()

	status, msg := store.RunSucceeded, ""
	switch {
	case ctx.Err() != nil:
		status, msg = store.RunCancelled, r.cancelMessage(ctx)
	case r.failed():
		status, msg = store.RunFailed, r.failureMessage()
	case r.anyUnreachable():
		status, msg = store.RunFailed, r.unreachableMessage()
	}
	if !r.run.Check {
		r.settleTriggers(bg, status != store.RunSucceeded)
	}
	if status == store.RunSucceeded && !r.run.Check {
		if err := r.commit(bg); err != nil {
			status, msg = store.RunFailed, err.Error()
		} else {
			log.InfoContext(bg, "run succeeded and committed")
			return r.final(store.RunSucceeded, "")
		}
	}
	if r.run.Drift {
		r.reportDrift(bg, status, msg)
	}
	if status != store.RunSucceeded {
		// The message quotes hosts' failure output: mask it before it is logged.
		log.WarnContext(bg, "run did not succeed", "status", status, "error", executor.MaskString(msg, r.secretList()))
	}
	return r.end(bg, status, msg)
}

// endBeforeTasks ends a run that stopped before its first task: cancelled
// when it was (a store call then fails with "context canceled", which is
// not the run's failure), else failed with msg.
func (r *runner) endBeforeTasks(ctx context.Context, msg string) Event {
	bg := context.WithoutCancel(ctx)
	if ctx.Err() != nil {
		return r.end(bg, store.RunCancelled, r.cancelMessage(ctx))
	}
	return r.end(bg, store.RunFailed, msg)
}

// end finishes the run without commit (a check run that succeeded, or a
// failure: the incarnation becomes error_locked).
func (r *runner) end(ctx context.Context, status, msg string) Event {
	msg = executor.MaskString(msg, r.secretList())
	finish := func() error { return r.e.cfg.Store.FinishRun(ctx, r.run.ID, status, msg, r.e.now()) }
	if err := storeRetry(r.e.giveUp, r.e.log.With("apply_id", r.run.ID), "recording the end of the run", finish); err != nil {
		r.e.log.ErrorContext(ctx, "recording the end of the run failed", "apply_id", r.run.ID, "err", err)
	}
	return r.final(status, msg)
}

func (r *runner) final(status, msg string) Event {
	return Event{Type: EventDone, RunID: r.run.ID, Time: r.e.now(), Status: status, Error: msg}
}

func (r *runner) cancelMessage(ctx context.Context) string {
	why := context.Cause(ctx).Error()
	if r.run.Check {
		return why + " (check run: nothing was changed or committed)"
	}
	return why + ": hosts may be half-done, so the incarnation is error_locked and nothing was committed; check the hosts, then unlock it"
}

func (r *runner) failureMessage() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := r.failure
	if len(r.unreachable) > 0 {
		msg += "; " + r.unreachableLocked()
	}
	return msg + "; nothing was committed"
}

func (r *runner) unreachableMessage() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachableLocked() + "; the run cannot commit: nothing was committed"
}

func (r *runner) unreachableLocked() string {
	sids := slices.Sorted(maps.Keys(r.unreachable))
	parts := make([]string, len(sids))
	for i, s := range sids {
		parts[i] = fmt.Sprintf("%s (in %q)", s, r.unreachable[s])
	}
	return "unreachable: " + strings.Join(parts, ", ")
}

// prepare loads the members' facts and the pending triggers and builds the
// base activation.
func (r *runner) prepare(ctx context.Context) error {
	r.members = slices.Sorted(slices.Values(r.inc.Members))
	r.factsRead = readsFacts(r.sc)
	souls, err := r.readMembers(ctx, r.members)
	if err != nil {
		return fmt.Errorf("reading the members' soulprints: %w", err)
	}
	bySID := make(map[string]store.Soul, len(souls))
	for _, s := range souls {
		bySID[s.SID] = s
	}
	r.hosts = make(map[string]*host, len(r.members))
	sps := make([]map[string]any, 0, len(r.members))
	for _, sid := range r.members {
		s := bySID[sid]
		facts := s.Facts()
		facts["sid"] = sid
		r.hosts[sid] = &host{sid: sid, covens: s.Covens, facts: facts}
		sps = append(sps, facts)
	}
	// Pending triggers fire in check runs too (reporting what the handler
	// would do); only normal runs add or clear them.
	ts, err := r.e.cfg.Store.ListTriggers(ctx, r.inc.Name, r.sc.Name)
	if err != nil {
		return fmt.Errorf("reading pending triggers: %w", err)
	}
	for _, t := range ts {
		if r.pending[t.Task] == nil {
			r.pending[t.Task] = map[string]bool{}
		}
		r.pending[t.Task][t.SID] = true
		if r.owedSince[t.Task] == nil {
			r.owedSince[t.Task] = map[string]string{}
		}
		r.owedSince[t.Task][t.SID] = t.RunID
	}
	covens := make([]any, len(r.inc.Covens))
	for i, c := range r.inc.Covens {
		covens[i] = c
	}
	members := make([]any, len(r.members))
	for i, m := range r.members {
		members[i] = m
	}
	r.base = expr.Activation{
		Order:     r.svc.KeyOrder,
		Input:     r.input,
		Essence:   r.svc.Essence(r.inc.Covens, r.inc.Name, r.inc.Essence),
		Registers: expr.NewRegisters(),
		Soulprint: expr.Soulprint{Hosts: sps, Members: sps},
		Incarnation: map[string]any{
			"name": r.inc.Name, "host_count": int64(len(r.members)), "covens": covens,
			"status": r.inc.Status, "members": members,
		},
		Run: map[string]any{"id": r.run.ID, "scenario": r.sc.Name, "check_mode": r.run.Check},
	}
	if r.base.State, err = r.openState(); err != nil {
		return err
	}
	if r.base.Secrets, err = r.loadSecrets(ctx); err != nil {
		return err
	}
	// Errors of expressions over secret inputs or sealed state never
	// quote values (N4).
	r.base.Sensitive = len(r.sc.Input.Secrets()) > 0 || len(r.secretState) > 0
	r.buildCanary()
	return nil
}

// emit publishes a live event of this run.
func (r *runner) emit(ev Event) {
	if r.live == nil {
		return
	}
	ev.RunID = r.run.ID
	ev.Time = r.e.now()
	r.live.publish(ev)
}

// emitRows publishes the host events of rows just stored.
func (r *runner) emitRows(rows []store.HostResult) {
	for i := range rows {
		r.emit(Event{Type: EventHost, Path: rows[i].Path, Task: rows[i].TaskName, Wave: rows[i].Wave, Result: &rows[i]})
	}
}

// fail records the run's first failure (fail-fast: nothing further starts
// but onfail handlers).
func (r *runner) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failure == "" {
		r.failure = msg
	}
}

func (r *runner) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failure != ""
}

func (r *runner) addSecrets(vals ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vals {
		if v != "" && !slices.Contains(r.secrets, v) {
			r.secrets = append(r.secrets, v)
		}
	}
}

func (r *runner) secretList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.secrets)
}

// anyUnreachable reports whether a host was lost in this run.
func (r *runner) anyUnreachable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.unreachable) > 0
}

// isUnreachable reports whether sid was lost earlier in this run.
func (r *runner) isUnreachable(sid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.unreachable[sid]
	return ok
}

// setResult keeps a host's final result of a task (requisites, triggers,
// block aggregates and the history summary read it).
func (r *runner) setResult(t *dsl.Task, sid string, res domain.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.results[t] == nil {
		r.results[t] = map[string]domain.Result{}
	}
	r.results[t][sid] = res
	if res.Unreachable {
		if _, ok := r.unreachable[sid]; !ok {
			r.unreachable[sid] = executor.TaskName(t)
		}
	}
}

func (r *runner) result(t *dsl.Task, sid string) (domain.Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[t][sid]
	return res, ok
}

// noteAttempt remembers the last attempt dispatched for t on sid: a late
// result of an earlier one is superseded.
func (r *runner) noteAttempt(t *dsl.Task, sid string, attempt int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.attempts[t] == nil {
		r.attempts[t] = map[string]int64{}
	}
	r.attempts[t][sid] = max(r.attempts[t][sid], attempt)
}

func (r *runner) lastAttempt(t *dsl.Task, sid string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[t][sid]
}

// summary is the outcome summary of the history snapshot, in counts (the
// per-host detail is the run's, GET /v1/runs/{apply_id}): how many hosts
// had results, how many of them changed or failed anything, and how many
// task results were ok, changed, failed, skipped (and any other status).
func (r *runner) summary() map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	perHost := map[string]map[domain.HostStatus]int{}
	out := map[string]any{"ok": 0, "changed": 0, "failed": 0, "skipped": 0}
	for t, hosts := range r.results {
		if t.Block != nil {
			continue // blocks aggregate their children, counted already
		}
		for sid, res := range hosts {
			if perHost[sid] == nil {
				perHost[sid] = map[domain.HostStatus]int{}
			}
			st := res.Status()
			perHost[sid][st]++
			n, _ := out[string(st)].(int)
			out[string(st)] = n + 1
		}
	}
	changed, failed := 0, 0
	for _, c := range perHost {
		if c[domain.StatusChanged] > 0 {
			changed++
		}
		if c[domain.StatusFailed] > 0 {
			failed++
		}
	}
	out["hosts"], out["hosts_changed"], out["hosts_failed"] = len(perHost), changed, failed
	return out
}
