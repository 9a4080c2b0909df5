package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/store"
)

// ResumeRequest asks to resume a run that did not succeed (SPEC §8.8).
type ResumeRequest struct {
	ApplyID string
	// Reason says why the hosts may be trusted again (the resume unlocks
	// the incarnation); it is logged here and audited by the API.
	Reason string
	// Secrets gives again the values of the run's secret inputs: the run
	// stored them masked.
	Secrets  map[string]any
	ArchonID string
}

// lastRunsScanned bounds how many recent runs ResumeRun reads to find the
// incarnation's last normal run.
const lastRunsScanned = 200

// ResumeRun resumes a failed, cancelled or aborted run of an error_locked
// incarnation (SPEC §8.8): a new run (resumed_from the old one) of the
// same scenario, input and commit, unlocking the incarnation as it
// starts. Tasks that finished everywhere in the old run are not run again
// — their recorded results fill register — except read-only probes, which
// run again in order; execution restarts at the first task that did not
// finish everywhere (for serial: at its first wave that did not finish).
// The commit barrier holds over the old and new results together. A run
// whose commit or members changed since, that is not the incarnation's
// last run, or that cannot be resumed is a conflict saying why.
func (e *Engine) ResumeRun(ctx context.Context, req ResumeRequest) (id string, err error) {
	if strings.TrimSpace(req.Reason) == "" {
		return "", domain.Errorf(domain.CodeInvalid, "reason is required: say why the hosts may be trusted again (it is audited)")
	}
	if err := e.reserve(); err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			e.release()
		}
	}()
	old, err := e.cfg.Store.GetRun(ctx, req.ApplyID)
	if err != nil {
		return "", fmt.Errorf("run %s: %w", req.ApplyID, err)
	}
	inc, err := e.resumable(ctx, old)
	if err != nil {
		return "", err
	}
	svc, err := e.cfg.Services.Open(ctx, inc.Service, inc.Commit)
	if err != nil {
		return "", fmt.Errorf("opening service %s at %s: %w", inc.Service, inc.Commit, err)
	}
	sc := svc.Scenarios[old.Scenario]
	if sc == nil {
		if old.Scenario != CreateScenario {
			return "", conflictf("service %s has no scenario %q any more", inc.Service, old.Scenario)
		}
		sc = &dsl.Scenario{Name: CreateScenario}
	}
	input, err := resumeInput(sc, old, req.Secrets)
	if err != nil {
		return "", err
	}
	resolved, err := sc.Input.Resolve(input)
	if err != nil {
		return "", fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	rows, err := e.cfg.Store.ListResults(ctx, old.ID)
	if err != nil {
		return "", fmt.Errorf("reading the results of run %s: %w", old.ID, err)
	}
	idx := indexScenario(sc)
	plan := planResume(sc, idx, old, rows)
	run := e.newRun(inc.Name, sc.Name, maskInput(sc, resolved), false, req.ArchonID)
	run.ResumedFrom, run.Commit, run.Members = old.ID, inc.Commit, sortedMembers(inc.Members)
	if err := e.cfg.Store.StartRun(ctx, run); err != nil {
		return "", fmt.Errorf("resuming run %s: %w", old.ID, err)
	}
	inc.Status, inc.LockReason = store.IncarnationApplying, ""
	e.log.InfoContext(ctx, "run resumed", "apply_id", run.ID, "resumed_from", old.ID, "incarnation", inc.Name,
		"scenario", sc.Name, "restart_at", plan.restartName(sc), "reason", req.Reason)
	r := e.newRunner(run, inc, svc, sc, resolved)
	r.resume = plan
	e.launch(r)
	return run.ID, nil
}

func conflictf(format string, args ...any) error {
	return domain.Errorf(domain.CodeConflict, format, args...)
}

// resumable checks that old may be resumed now and returns its
// incarnation.
func (e *Engine) resumable(ctx context.Context, old store.Run) (store.Incarnation, error) {
	if old.Check {
		return store.Incarnation{}, conflictf("run %s is a check run: it changed nothing, there is nothing to resume", old.ID)
	}
	switch old.Status {
	case store.RunFailed, store.RunCancelled, store.RunAborted:
	default:
		return store.Incarnation{}, &domain.Error{Code: domain.CodeConflict, Details: old.Status,
			Message: fmt.Sprintf("run %s is %s: only a failed, cancelled or aborted run can be resumed", old.ID, old.Status)}
	}
	inc, err := e.cfg.Store.GetIncarnation(ctx, old.Incarnation)
	if err != nil {
		return inc, fmt.Errorf("incarnation %s: %w", old.Incarnation, err)
	}
	if inc.ActiveRun != "" {
		return inc, &domain.Error{Code: domain.CodeConflict, Details: inc.ActiveRun,
			Message: fmt.Sprintf("incarnation %q has an active run %s", inc.Name, inc.ActiveRun)}
	}
	if inc.Status != store.IncarnationErrorLocked {
		return inc, conflictf("incarnation %q is %s, not error_locked: run %s was settled since (unlocked or run again); start a new run instead", inc.Name, inc.Status, old.ID)
	}
	runs, err := e.cfg.Store.ListRuns(ctx, inc.Name, lastRunsScanned)
	if err != nil {
		return inc, fmt.Errorf("listing the runs of %s: %w", inc.Name, err)
	}
	for _, r := range runs {
		if r.Check {
			continue
		}
		if r.ID != old.ID {
			return inc, conflictf("run %s is not the last run of incarnation %q (%s is): resume that one", old.ID, inc.Name, r.ID)
		}
		break
	}
	if old.Commit == "" {
		return inc, conflictf("run %s was recorded before runs kept their commit and members: it cannot be resumed; start a new run", old.ID)
	}
	if old.Commit != inc.Commit {
		return inc, conflictf("the service commit changed since run %s (it ran %s, the incarnation is now at %s): resume would mix two versions of the scenario; start a new run", old.ID, short(old.Commit), short(inc.Commit))
	}
	added, removed := setDiff(sortedMembers(inc.Members), sortedMembers(old.Members))
	if added, err = notCloudMade(ctx, e.cfg.Store, inc.Name, added); err != nil {
		return inc, err
	}
	if len(added)+len(removed) > 0 {
		var parts []string
		if len(added) > 0 {
			parts = append(parts, "added "+strings.Join(added, ", "))
		}
		if len(removed) > 0 {
			parts = append(parts, "removed "+strings.Join(removed, ", "))
		}
		return inc, conflictf("the members of incarnation %q changed since run %s (%s): start a new run", inc.Name, old.ID, strings.Join(parts, "; "))
	}
	return inc, nil
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func sortedMembers(m []string) []string {
	out := slices.Clone(m)
	slices.Sort(out)
	return slices.Compact(out)
}

// setDiff returns what now has that before has not, and the reverse.
func setDiff(now, before []string) (added, removed []string) {
	for _, s := range now {
		if !slices.Contains(before, s) {
			added = append(added, s)
		}
	}
	for _, s := range before {
		if !slices.Contains(now, s) {
			removed = append(removed, s)
		}
	}
	return added, removed
}

// resumeInput is the old run's input with the secret values given again
// (the run stored them masked).
func resumeInput(sc *dsl.Scenario, old store.Run, given map[string]any) (map[string]any, error) {
	secrets := sc.Input.Secrets()
	input := maps.Clone(old.Input)
	if input == nil {
		input = map[string]any{}
	}
	for k, v := range given {
		if !slices.Contains(secrets, k) {
			return nil, domain.Errorf(domain.CodeInvalid, "input %q: a resume runs with the input of run %s; only secret inputs (%s) are given again", k, old.ID, strings.Join(secrets, ", "))
		}
		input[k] = v
	}
	var missing []string
	for _, s := range secrets {
		if _, ok := given[s]; !ok && input[s] == executor.MaskText {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, domain.Errorf(domain.CodeUnprocessable, "run %s had the secret input %s, stored masked: give it again (input: {%s: …})", old.ID, strings.Join(missing, ", "), missing[0])
	}
	return input, nil
}

// resumePlan is what a resumed run takes from the run it resumes.
type resumePlan struct {
	from string
	// restart is the index in the scenario's top-level tasks where
	// execution restarts (len(tasks): none, only the probes and the
	// commit).
	restart int
	// rows are the old run's results by seq and SID (its own and those it
	// carried from the run it resumed).
	rows map[int]map[string]store.HostResult
	// replaying is set while a block before the restart point is entered
	// again for its probes (walkResumed).
	replaying bool
}

// planResume finds where a resumed run restarts: the first top-level task
// (onfail handlers aside) with a failed or unreachable result in the old
// run; when there is none (a run cancelled or aborted between results,
// or one that failed at the commit), the last task with results, since
// it may not have finished everywhere — for a run that failed at the
// commit, nothing.
func planResume(sc *dsl.Scenario, idx *taskIndex, old store.Run, rows []store.HostResult) *resumePlan {
	p := &resumePlan{from: old.ID, restart: len(sc.Tasks), rows: map[int]map[string]store.HostResult{}}
	for _, row := range rows {
		if idx.task(row.Seq, row.Path) == nil {
			continue
		}
		if p.rows[row.Seq] == nil {
			p.rows[row.Seq] = map[string]store.HostResult{}
		}
		p.rows[row.Seq][row.SID] = row
	}
	last := -1
	for i, t := range sc.Tasks {
		if len(t.Onfail) > 0 {
			continue
		}
		hi := len(idx.bySeq)
		if i+1 < len(sc.Tasks) {
			hi = idx.seq[sc.Tasks[i+1]]
		}
		has, bad := false, false
		for s := idx.seq[t]; s < hi; s++ {
			for _, row := range p.rows[s] {
				has = true
				st := domain.HostStatus(row.Status)
				bad = bad || st == domain.StatusFailed || st == domain.StatusUnreachable
			}
		}
		if bad {
			p.restart = i
			return p
		}
		if has {
			last = i
		}
	}
	if old.Status != store.RunFailed && last >= 0 {
		p.restart = last
	}
	return p
}

func (p *resumePlan) restartName(sc *dsl.Scenario) string {
	if p.restart >= len(sc.Tasks) {
		return "(none: every task finished)"
	}
	return executor.TaskName(sc.Tasks[p.restart])
}

// walkResumed runs a resumed run's top-level tasks: before the restart
// point the old results are carried over (probes run again, in order),
// from it on the tasks run as usual.
func (r *runner) walkResumed(ctx context.Context) {
	top := r.topScope()
	tasks := r.sc.Tasks
	for i, t := range tasks[:r.resume.restart] {
		if ctx.Err() != nil {
			return
		}
		if r.failed() {
			// A probe failed: fail-fast, only handlers still run.
			r.walk(ctx, tasks[i:], top)
			return
		}
		switch {
		case t.IsProbe():
			r.task(ctx, t, top)
		case holdsProbe(t):
			// The block is entered again (its where/when see live data)
			// so its probes run; its other tasks are carried over.
			r.resume.replaying = true
			r.task(ctx, t, top)
			r.resume.replaying = false
		default:
			r.carry(t, nil)
		}
	}
	r.walk(ctx, tasks[r.resume.restart:], top)
}

// holdsProbe reports whether block t holds a read-only probe.
func holdsProbe(t *dsl.Task) bool {
	return slices.ContainsFunc(t.Block, func(c *dsl.Task) bool { return c.IsProbe() || holdsProbe(c) })
}

// replayed carries the old results of a non-probe task of a block being
// replayed (walkResumed) on hosts instead of running it; false when t is
// to run.
func (r *runner) replayed(t *dsl.Task, hosts []string) bool {
	if r.resume == nil || !r.resume.replaying || t.IsProbe() {
		return false
	}
	only := make(map[string]bool, len(hosts))
	for _, sid := range hosts {
		only[sid] = true
	}
	r.carry(t, only)
	return true
}

// resumeWave reports whether wave hosts of serial task t finished in the
// run being resumed (every host has a result that is neither failed nor
// unreachable): then its results are carried over and the wave is not
// run again.
func (r *runner) resumeWave(t *dsl.Task, hosts []string) bool {
	if r.resume == nil || r.resume.restart >= len(r.sc.Tasks) || r.sc.Tasks[r.resume.restart] != t {
		return false
	}
	rows := r.resume.rows[r.seq[t]]
	for _, sid := range hosts {
		row, ok := rows[sid]
		st := domain.HostStatus(row.Status)
		if !ok || st == domain.StatusFailed || st == domain.StatusUnreachable {
			return false
		}
	}
	only := make(map[string]bool, len(hosts))
	for _, sid := range hosts {
		only[sid] = true
	}
	r.carry(t, only)
	return true
}

// carry takes the old run's results of t (and of its block's tasks) on
// the hosts of only (nil: all) as this run's: they fill register and the
// results the commit barrier and the triggers see, and are recorded in
// this run marked with data.carried_from.
func (r *runner) carry(t *dsl.Task, only map[string]bool) {
	var rows []store.HostResult
	var walk func(t *dsl.Task)
	walk = func(t *dsl.Task) {
		if t.Register != "" {
			r.base.Registers.Declare(t.Register)
		}
		for _, sid := range slices.Sorted(maps.Keys(r.resume.rows[r.seq[t]])) {
			if only != nil && !only[sid] {
				continue
			}
			row := r.resume.rows[r.seq[t]][sid]
			res := resultOfRow(row)
			r.setResult(t, sid, res)
			if t.Register != "" && !res.Unreachable {
				r.base.Registers.Set(t.Register, sid, res)
			}
			c := row
			c.RunID = r.run.ID
			c.Data = maps.Clone(row.Data)
			if c.Data == nil {
				c.Data = map[string]any{}
			}
			if _, ok := c.Data[carriedKey]; !ok {
				c.Data[carriedKey] = r.resume.from
			}
			rows = append(rows, c)
		}
		for _, c := range t.Block {
			walk(c)
		}
	}
	walk(t)
	if len(rows) > 0 {
		r.rec.add(rows...)
		r.rec.flush()
	}
}

// carriedKey marks, in a result's data, the run a resumed run took it
// from.
const carriedKey = "carried_from"

// resultOfRow rebuilds a host's result from its stored form, as register
// shows it.
func resultOfRow(row store.HostResult) domain.Result {
	st := domain.HostStatus(row.Status)
	res := domain.Result{
		Changed: row.Changed, Failed: st == domain.StatusFailed, Skipped: st == domain.StatusSkipped,
		Unreachable: st == domain.StatusUnreachable, RC: row.RC, Stdout: row.Stdout, Stderr: row.Stderr,
		Msg: row.Msg, Diff: row.Diff, DurationMS: row.DurationMS,
	}
	data := maps.Clone(row.Data)
	if out, ok := data["output"].(map[string]any); ok {
		res.Output = out
	}
	if items, ok := data["results"].([]any); ok {
		for _, it := range items {
			m, _ := it.(map[string]any)
			res.Results = append(res.Results, resultOfSummary(m))
		}
	}
	for _, k := range []string{"output", "results", "tasks", "truncated", carriedKey} {
		delete(data, k)
	}
	if len(data) > 0 {
		res.Data = data
	}
	return res
}

// resultOfSummary rebuilds a loop item's result from its stored summary.
func resultOfSummary(m map[string]any) domain.Result {
	str := func(k string) string { s, _ := m[k].(string); return s }
	num := func(k string) int64 {
		switch v := m[k].(type) {
		case float64:
			return int64(v)
		case int64:
			return v
		case int:
			return int64(v)
		}
		return 0
	}
	st := domain.HostStatus(str("status"))
	changed, _ := m["changed"].(bool)
	return domain.Result{
		Changed: changed, Failed: st == domain.StatusFailed, Skipped: st == domain.StatusSkipped,
		Unreachable: st == domain.StatusUnreachable, RC: int(num("rc")), Stdout: str("stdout"), Stderr: str("stderr"),
		Msg: str("msg"), Diff: str("diff"), DurationMS: num("duration_ms"),
	}
}
