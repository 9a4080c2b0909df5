package engine

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/store"
)

// taskRef is what a TaskID names: one attempt of one task on one host in
// one wave of a run — enough to record a late result of it without the
// run's runner (after a keeper restart there is none).
type taskRef struct {
	seq     int
	path    string
	wave    int
	sid     string
	attempt int64
}

// id is the TaskID of the work:
// "<run>/<seq>/<path>/<wave>/<sid>/<attempt>/<mac>", unique per run, task,
// host and attempt. The MAC (keyed by Config.TaskKey, shared by the
// keepers of one database) proves the work was dispatched to that soul:
// a soul cannot make up the id of a task it was never sent (SPEC §10.3,
// audit finding L5).
func (tr taskRef) id(runID string, key []byte) string {
	base := fmt.Sprintf("%s/%d/%s/%d/%s/%d", runID, tr.seq, tr.path, tr.wave, tr.sid, tr.attempt)
	return base + "/" + taskMAC(key, base)
}

func taskMAC(key []byte, base string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(base))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// parseTaskID reads a TaskID of run runID back, checking its MAC.
func parseTaskID(runID, id string, key []byte) (taskRef, error) {
	rest, ok := strings.CutPrefix(id, runID+"/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) < 6 {
		return taskRef{}, fmt.Errorf("task id %q is not <run>/<seq>/<path>/<wave>/<sid>/<attempt>/<mac> of run %q", id, runID)
	}
	n := len(parts)
	base := strings.TrimSuffix(id, "/"+parts[n-1])
	if !hmac.Equal([]byte(parts[n-1]), []byte(taskMAC(key, base))) {
		return taskRef{}, fmt.Errorf("task id %q of run %q was not dispatched by a keeper of this database", id, runID)
	}
	seq, err1 := strconv.Atoi(parts[0])
	wave, err2 := strconv.Atoi(parts[2])
	attempt, err3 := strconv.ParseInt(parts[n-2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || seq < 0 || parts[1] == "" {
		return taskRef{}, fmt.Errorf("task id %q of run %q has a malformed seq, wave or attempt", id, runID)
	}
	return taskRef{seq: seq, path: parts[1], wave: wave, sid: strings.Join(parts[3:n-2], "/"), attempt: attempt}, nil
}

// lateResult is a result nobody waited for any more.
type lateResult struct {
	runID  string
	taskID string
	ref    taskRef
	res    domain.Result
	at     time.Time
}

// lateQueue hands late results from the gateway's readers to one goroutine
// owned by the engine, started with the first late result and drained by
// Close.
type lateQueue struct {
	mu      sync.Mutex
	items   []lateResult
	started bool
	closed  bool
	wake    chan struct{} // results are waiting, or a run ended
	done    chan struct{} // the drainer exited
}

func newLateQueue() lateQueue {
	return lateQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (q *lateQueue) take() ([]lateResult, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items, q.closed
}

// RecordLate records a result nobody waits for any more (SPEC §8.5: late
// results of aborted runs are recorded but change nothing) — the keeper
// wires the gateway's OnLateResult to it. The result becomes its host's row
// of the task in the run's results, marked late; the run's status and the
// incarnation's state and status stay as they are. Only the pending
// triggers may grow: a late change of a task an onchanges handler watches,
// in a run that did not succeed, leaves the handler owed to the host (SPEC
// §8.3), as it would have had the result come in time.
//
// A late result of a run still executing here (its task timed out, or the
// host was lost) is recorded once the run has ended, unless a later
// attempt superseded it. Results of runs another keeper is executing are
// left to it.
//
// RecordLate never blocks: results are queued for a goroutine of the
// engine, and Close records what is queued.
func (e *Engine) RecordLate(sid, runID, taskID string, r domain.Result) {
	ref, err := parseTaskID(runID, taskID, e.cfg.TaskKey)
	if err != nil {
		e.log.Warn("ignoring a late result of work this engine did not send", "sid", sid, "err", err)
		return
	}
	if ref.sid != sid {
		e.log.Warn("ignoring a late result for another host's work", "sid", sid, "apply_id", runID, "task_id", taskID)
		return
	}
	q := &e.late
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		e.log.Info("late result not recorded: the engine is closed", "sid", sid, "apply_id", runID, "task_id", taskID)
		return
	}
	q.items = append(q.items, lateResult{runID: runID, taskID: taskID, ref: ref, res: r, at: e.now()})
	start := !q.started
	q.started = true
	q.mu.Unlock()
	if start {
		go e.drainLate()
	}
	signal(q.wake)
}

// closeLate records the queued late results and stops their goroutine
// (Close, once no run executes any more).
func (e *Engine) closeLate() {
	q := &e.late
	q.mu.Lock()
	q.closed = true
	started := q.started
	q.mu.Unlock()
	if started {
		signal(q.wake)
		<-q.done
	}
}

// drainLate records late results in batches, per run: those of a run
// still executing here wait for its end.
func (e *Engine) drainLate() {
	q := &e.late
	defer close(q.done)
	ctx := context.Background()
	waiting := map[string]*waitingLate{}
	for range q.wake {
		for {
			items, closed := q.take()
			for _, g := range byRun(items) {
				if w := waiting[g.runID]; w != nil {
					w.items = append(w.items, g.items...)
					continue
				}
				if lr := e.liveRun(g.runID); lr != nil {
					waiting[g.runID] = &waitingLate{lr: lr, items: g.items}
					continue
				}
				e.recordLate(ctx, g.runID, nil, g.items)
			}
			for id, w := range waiting {
				ended := closed // Close waited for every run
				select {
				case <-w.lr.done:
					ended = true
				default:
				}
				if ended {
					<-w.lr.done
					e.recordLate(ctx, id, w.lr.runner, w.items)
					delete(waiting, id)
				}
			}
			if len(items) == 0 {
				if closed {
					return
				}
				break
			}
		}
	}
}

// waitingLate are late results of a run still executing here.
type waitingLate struct {
	lr    *liveRun
	items []lateResult
}

type runLate struct {
	runID string
	items []lateResult
}

// byRun groups items by run, in order of arrival.
func byRun(items []lateResult) []runLate {
	var out []runLate
	at := map[string]int{}
	for _, it := range items {
		i, ok := at[it.runID]
		if !ok {
			i = len(out)
			at[it.runID] = i
			out = append(out, runLate{runID: it.runID})
		}
		out[i].items = append(out[i].items, it)
	}
	return out
}

func (e *Engine) liveRun(id string) *liveRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[id]
}

// lateRun is what recording late results of one run needs.
type lateRun struct {
	run store.Run
	inc store.Incarnation
	svc *dsl.Service // nil when the service could not be loaded
	idx *taskIndex   // nil when the scenario is unknown
	r   *runner      // the run's runner when it executed here (ended now)
}

// recordLate records the late results of one ended run (r is its runner
// when it executed on this engine).
func (e *Engine) recordLate(ctx context.Context, runID string, r *runner, items []lateResult) {
	log := e.log.With("apply_id", runID)
	run, err := e.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		log.WarnContext(ctx, "late results not recorded", "count", len(items), "err", err)
		return
	}
	if run.FinishedAt == nil {
		log.InfoContext(ctx, "late results left to the keeper executing the run", "keeper_id", run.KeeperID, "count", len(items))
		return
	}
	lr := lateRun{run: run, r: r}
	if r != nil {
		lr.inc, lr.svc, lr.idx = r.inc, r.svc, r.idx
	} else if inc, svc, sc, err := e.scenarioOf(ctx, run); err != nil {
		log.WarnContext(ctx, "late results recorded without their task names: the run's scenario cannot be loaded", "err", err)
	} else {
		lr.inc, lr.svc = inc, svc
		if sc != nil {
			lr.idx = indexScenario(sc)
		}
	}
	if lr.inc.Name == "" {
		if lr.inc, err = e.cfg.Store.GetIncarnation(ctx, run.Incarnation); err != nil {
			log.WarnContext(ctx, "late results not recorded: the run's incarnation cannot be read", "count", len(items), "err", err)
			return
		}
	}
	// Only a member of the incarnation was ever sent this run's work: a soul
	// cannot add results (or owed handlers) to another incarnation's run.
	items = slices.DeleteFunc(items, func(it lateResult) bool {
		if slices.Contains(lr.inc.Members, it.ref.sid) {
			return false
		}
		log.WarnContext(ctx, "ignoring a late result from a soul that is not a member of the run's incarnation", "sid", it.ref.sid, "task_id", it.taskID)
		return true
	})
	var secrets []string
	if r != nil {
		secrets = r.secretList()
	}
	// The highest attempt of a task on a host is its result.
	last := map[rowKey]int{}
	for i, it := range items {
		k := rowKey{it.ref.seq, it.ref.sid}
		if j, ok := last[k]; !ok || items[j].ref.attempt <= it.ref.attempt {
			last[k] = i
		}
	}
	rows := make([]store.HostResult, 0, len(last))
	changed := false
	for i, it := range items {
		if last[rowKey{it.ref.seq, it.ref.sid}] != i {
			continue
		}
		var t *dsl.Task
		if lr.idx != nil {
			t = lr.idx.task(it.ref.seq, it.ref.path)
		}
		if t != nil && t.Delegate != nil {
			// The rows of a delegated task are the wave hosts', decided
			// when the run gave up on the delegate; a row of the delegate
			// itself would claim it ran the task for itself.
			log.InfoContext(ctx, "late result of delegated work not recorded: the wave host's row keeps the run's verdict", "sid", it.ref.sid, "task_id", it.taskID)
			continue
		}
		if r != nil && t != nil && r.lastAttempt(t, it.ref.sid) > it.ref.attempt {
			log.DebugContext(ctx, "late result superseded by a later attempt", "task_id", it.taskID)
			continue
		}
		row := e.lateRow(lr, t, it, secrets)
		changed = changed || row.Changed
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return
	}
	// A late result lands only where the soul never answered (no row, or
	// the keeper's timeout/unreachable verdict), and once: it never
	// replaces a recorded final result (SPEC §10.3, audit finding L5).
	n, err := e.cfg.Store.RecordLateResults(ctx, rows)
	if err != nil {
		log.ErrorContext(ctx, "recording late results failed", "count", len(rows), "err", err)
		return
	}
	if n < len(rows) {
		log.WarnContext(ctx, "late results not recorded: their rows hold final results already", "count", len(rows)-n)
	}
	log.InfoContext(ctx, "late results recorded; they change nothing in the run's outcome", "status", run.Status, "count", n)
	if n == 0 || !changed || run.Check || run.Status == store.RunSucceeded || lr.idx == nil {
		return
	}
	if n, err := e.addOwedTriggers(ctx, run, lr.inc, lr.idx); err != nil {
		log.ErrorContext(ctx, "recording the handlers owed after late results failed", "err", err)
	} else if n > 0 {
		log.InfoContext(ctx, "handlers owed after late changes recorded as pending triggers", "count", n)
	}
}

// lateMsg heads the message of a late result's row.
const lateMsg = "late result, recorded after the run stopped waiting for it"

// lateRow is the stored form of a late result: the host's row of the task,
// as the soul reported it (changed_when and failed_when are not applied:
// they need the run's context), marked late. When the run's secret values
// are not known any more (it did not end on this engine) and the task may
// have handled some, only the outcome is kept.
func (e *Engine) lateRow(lr lateRun, t *dsl.Task, it lateResult, secrets []string) store.HostResult {
	res := it.res
	name := "task " + it.ref.path
	if t != nil {
		name = executor.TaskName(t)
	}
	withheld := lr.r == nil && mayHoldSecrets(lr, t)
	if withheld {
		res = domain.Result{Changed: res.Changed, Failed: res.Failed, Skipped: res.Skipped, Unreachable: res.Unreachable, RC: res.RC, DurationMS: res.DurationMS}
		res.Msg = lateMsg + " (output withheld: the run's secret values are no longer known to mask it)"
	} else if res.Msg != "" {
		res.Msg = lateMsg + ": " + res.Msg
	} else {
		res.Msg = lateMsg
	}
	start := it.at.Add(-time.Duration(it.res.DurationMS) * time.Millisecond)
	row := rowOf(lr.run.ID, it.ref.seq, it.ref.path, name, it.ref.sid, it.ref.wave, res, start, it.at, secrets, e.cfg.OutputCap)
	if row.Data == nil {
		row.Data = map[string]any{}
	}
	row.Data["late"] = true
	if lr.r != nil && t != nil {
		if prev, ok := lr.r.result(t, it.ref.sid); ok {
			prev = executor.Mask(prev, secrets)
			msg, _ := capText(prev.Msg, e.cfg.OutputCap)
			row.Data["superseded"] = map[string]any{"status": string(prev.Status()), "changed": prev.Changed, "msg": msg}
		}
	}
	return row
}

// mayHoldSecrets reports whether a result of t may show a secret value:
// the scenario or the destiny t applies has secret inputs (or what t is
// cannot be told).
func mayHoldSecrets(lr lateRun, t *dsl.Task) bool {
	if lr.idx == nil || t == nil || len(lr.idx.sc.Input.Secrets()) > 0 {
		return true
	}
	if t.Apply == nil {
		return false
	}
	if lr.svc == nil {
		return true
	}
	d := lr.svc.Destinies[t.Apply.Destiny]
	return d == nil || len(d.Input.Secrets()) > 0
}
