package checker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// dep is an id pushed into @deps and where it came from: a Checker task
// (srcChecker), an external platform (extSrcPrefx+prefix), or unknown (a
// soulctl command's result: a Checker task or a Soul Stack run).
type dep struct {
	ID, Source string
	Status     DepStatus
}

// depIDs extracts the ids of a value pushed into @deps: a string, an
// object's task_id / uuid / id / apply_id, or a list of those.
func depIDs(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return nil, errors.New("empty id")
		}
		return []string{x}, nil
	case map[string]any:
		for _, k := range []string{"task_id", "uuid", "id", "apply_id"} {
			if s, ok := x[k].(string); ok && s != "" {
				return []string{s}, nil
			}
		}
		return nil, fmt.Errorf("object %s has no task_id, uuid, id or apply_id", toJSON(x))
	case []any:
		var out []string
		for _, e := range x {
			ids, err := depIDs(e)
			if err != nil {
				return nil, err
			}
			out = append(out, ids...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot take a task id from %s", toJSON(v))
}

func (r *run) depList() []any {
	out := make([]any, len(r.deps))
	for i, d := range r.deps {
		out[i] = d.ID
	}
	return out
}

func (r *run) depStatusList() []any {
	out := make([]any, len(r.deps))
	for i, d := range r.deps {
		out[i] = map[string]any{
			"task_id":      d.Status.TaskID,
			"task_name":    d.Status.TaskName,
			"task_status":  d.Status.TaskStatus,
			"run_error":    d.Status.RunError,
			"task_message": d.Status.TaskMessage,
		}
	}
	return out
}

// waitDeps blocks until every dependency pushed since the last wait has a
// terminal status, then refreshes @deps_status. Checker tasks running in
// this keeper are awaited directly; anything else is polled every
// PollInterval on the Clock.
func (r *run) waitDeps() error {
	if r.waited == len(r.deps) {
		return nil
	}
	pending := r.deps[r.waited:]
	r.logf(r.depsStep, LogDeps, map[string]any{"ids": r.depList()[r.waited:]}, "waiting for %d dependenc%s", len(pending), plural(len(pending), "y", "ies"))
	for {
		var local []<-chan struct{}
		remote := 0
		for i := range pending {
			d := &pending[i]
			if IsTerminal(d.Status.TaskStatus) {
				continue
			}
			st, err := r.c.depStatus(r.ctx, r.task.ID, *d)
			if err != nil {
				return fmt.Errorf("waiting for %s: %w", d.ID, err)
			}
			d.Status = st
			if IsTerminal(st.TaskStatus) {
				continue
			}
			if done := r.c.doneChan(d.ID); done != nil {
				local = append(local, done)
			} else {
				remote++
			}
		}
		switch {
		case len(local) == 0 && remote == 0:
			r.waited = len(r.deps)
			r.vars[VarDepsStatus] = r.depStatusList()
			var lines []string
			for _, d := range pending {
				lines = append(lines, fmt.Sprintf("%s %s: %s", d.Status.TaskName, d.ID, d.Status.TaskStatus))
			}
			r.logf(r.depsStep, LogDeps, map[string]any{"deps_status": r.vars[VarDepsStatus]}, "dependencies done: %s", strings.Join(lines, ", "))
			return nil
		case remote == 0:
			for _, done := range local {
				select {
				case <-done:
				case <-r.ctx.Done():
					return r.ctx.Err()
				}
			}
		default:
			if err := r.sleep(r.c.poll); err != nil {
				return err
			}
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// depStatus reads the current status of one dependency.
func (c *Checker) depStatus(ctx context.Context, taskID string, d dep) (DepStatus, error) {
	if name, ok := strings.CutPrefix(d.Source, extSrcPrefx); ok {
		b, ok := c.bindings[name]
		if !ok || b.StatusCommand == "" {
			return DepStatus{}, fmt.Errorf("the binding of %q declares no status command, so its task ids cannot be waited for", name)
		}
		return c.externalStatus(ctx, taskID, b, d.ID)
	}
	t, err := c.store.GetCheckerTask(ctx, d.ID)
	if err == nil {
		return DepStatus{TaskID: t.ID, TaskName: t.Procedure, TaskStatus: t.Status, RunError: t.RunError, TaskMessage: t.Message}, nil
	}
	if !errors.Is(err, domain.ErrNotFound) || d.Source == srcChecker {
		return DepStatus{}, err
	}
	st, err := c.runStatus(ctx, d.ID)
	if errors.Is(err, domain.ErrNotFound) {
		return DepStatus{}, fmt.Errorf("%s is neither a Checker task nor a Soul Stack run", d.ID)
	}
	return st, err
}

// externalStatus runs the status command that binding b (the one that
// produced id) declares. The status command is an apicall like any other
// (SPEC §13): it is resolved through the binding table by its own prefix
// (the seed's "tasks show --uuid {id}" through a tasks binding), or is a
// soulctl command.
func (c *Checker) externalStatus(ctx context.Context, taskID string, b Binding, id string) (DepStatus, error) {
	cmd, err := ParseCommand(b.StatusCommand)
	if err != nil {
		return DepStatus{}, err
	}
	argv, err := cmd.Argv(nil)
	if err != nil {
		return DepStatus{}, err
	}
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], "{id}", id)
	}
	res := c.dispatch(ctx, taskID, argv)
	if res.err != nil {
		return DepStatus{}, fmt.Errorf("status of %s (%s): %w", id, shellJoin(argv), res.err)
	}
	v, err := normalize(res.value)
	if err != nil {
		return DepStatus{}, fmt.Errorf("status of %s (%s): %w", id, shellJoin(argv), err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return DepStatus{}, fmt.Errorf("status of %s: %s returned %s, not an object", id, shellJoin(argv), toJSON(v))
	}
	st := DepStatus{TaskID: id, TaskName: b.Prefix}
	st.TaskStatus, _ = m["task_status"].(string)
	if s, ok := m["task_name"].(string); ok && s != "" {
		st.TaskName = s
	}
	st.RunError, _ = m["run_error"].(string)
	st.TaskMessage, _ = m["task_message"].(string)
	switch st.TaskStatus {
	case StatusPending, StatusRunning, StatusSuccess, StatusFailure, StatusCancelled, StatusTimeout:
		return st, nil
	}
	return DepStatus{}, fmt.Errorf("status of %s: unknown task_status %q (want PENDING, RUNNING, SUCCESS, FAILURE, CANCELLED or TIMEOUT)", id, st.TaskStatus)
}

// storeRunStatus reads a Soul Stack run from the store as a dependency.
func (c *Checker) storeRunStatus(ctx context.Context, id string) (DepStatus, error) {
	run, err := c.store.GetRun(ctx, id)
	if err != nil {
		return DepStatus{}, err
	}
	st := DepStatus{TaskID: run.ID, TaskName: run.Incarnation + "/" + run.Scenario, RunError: run.Error}
	switch run.Status {
	case store.RunPending:
		st.TaskStatus = StatusPending
	case store.RunRunning:
		st.TaskStatus = StatusRunning
	case store.RunSucceeded:
		st.TaskStatus = StatusSuccess
	case store.RunCancelled:
		st.TaskStatus = StatusCancelled
	default: // failed, aborted
		st.TaskStatus = StatusFailure
		if st.RunError == "" {
			st.RunError = "run " + run.Status
		}
	}
	return st, nil
}
