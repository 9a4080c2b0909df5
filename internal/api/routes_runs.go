package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesRuns) }

// Timings of the run event stream; tests shorten them.
var (
	sseKeepAlive = 15 * time.Second // comment line that keeps proxies from timing out
	ssePoll      = time.Second      // re-read of a run not live on this keeper
)

// routesRuns serves runs: their tasks × hosts results, their live events
// and their cancellation.
func (s *Server) routesRuns(rt *Router) {
	if s.cfg.Engine == nil {
		return
	}
	rt.Handle("GET /v1/runs", listed(), s.listRuns)
	rt.Handle("GET /v1/runs/{apply_id}", onPath(auth.PermRead, auth.ObjRun, "apply_id"), s.getRun)
	rt.Handle("GET /v1/runs/{apply_id}/events", onPath(auth.PermRead, auth.ObjRun, "apply_id"), s.runEvents)
	rt.Handle("POST /v1/runs/{apply_id}/cancel", onPath(auth.PermCancel, auth.ObjRun, "apply_id"), s.cancelRun)
	rt.Handle("POST /v1/runs/{apply_id}/resume", onPath(auth.PermResume, auth.ObjRun, "apply_id"), s.resumeRun)
}

// resumeRun resumes a failed, cancelled or aborted run (SPEC §8.8); the
// reason lands in the audit entry, the secret inputs given again do not.
func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.ResumeRequest
	MaskAuditValues(r, "input")
	if err := decode(r, &req); err != nil {
		return err
	}
	id := r.PathValue("apply_id")
	old, err := s.run(r.Context(), id)
	if err != nil {
		return err
	}
	SetAuditTarget(r, old.Incarnation+"/"+id)
	newID, err := s.cfg.Engine.ResumeRun(r.Context(), engine.ResumeRequest{ApplyID: id, Reason: req.Reason, Secrets: req.Input, ArchonID: p.ArchonID})
	if err != nil {
		return err
	}
	SetAuditTarget(r, old.Incarnation+"/"+newID)
	writeJSON(w, http.StatusAccepted, apitypes.Accepted{ApplyID: newID})
	return nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	after, limit, err := pageParams(r, 100)
	if err != nil {
		return err
	}
	acc, err := s.auth.Access(r.Context(), p)
	if err != nil {
		return err
	}
	q := store.RunQuery{Incarnation: r.URL.Query().Get("incarnation"), Before: after, Limit: limit}
	if err := s.runVisibility(r.Context(), acc, &q); err != nil {
		return err
	}
	page, err := s.store.PageRuns(r.Context(), q)
	if err != nil {
		return err
	}
	setNext(w, r, page.Next)
	runs := nonNil(page.Runs)
	for i := range runs {
		runs[i].Members = nil // GET /v1/runs/{apply_id} has them: a list of runs over 50,000 hosts would not
	}
	writeJSON(w, http.StatusOK, wireList(runs, wireRun))
	return nil
}

// run reads the run named in the path.
func (s *Server) run(ctx context.Context, id string) (store.Run, error) {
	run, err := s.store.GetRun(ctx, id)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return run, notFoundf("run %q does not exist", id)
	}
	return run, err
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	id := r.PathValue("apply_id")
	run, err := s.run(r.Context(), id)
	if err != nil {
		return err
	}
	after, limit, err := pageParams(r, store.DefaultPageLimit)
	if err != nil {
		return err
	}
	page, err := s.store.PageResults(r.Context(), id, store.ResultQuery{After: after, Limit: limit})
	if err != nil {
		return err
	}
	notes, err := s.store.ListRunNotes(r.Context(), id)
	if err != nil {
		return err
	}
	detail := RunDetailPage(run, page, notes)
	setNext(w, r, page.Next)
	if h, err := s.store.GetRunHealth(r.Context(), id); err != nil {
		return err
	} else if h != nil {
		if err := json.Unmarshal(h, &detail.Health); err != nil {
			return fmt.Errorf("decoding the health after run %s: %w", id, err)
		}
	}
	if detail.Rule, err = s.store.RunRule(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, detail)
	return nil
}

// RunDetail groups a run's results by task (in task order) and host; a
// task that targeted no host has no hosts and its note says why.
func RunDetail(run store.Run, rs []store.HostResult, notes []store.RunNote) apitypes.RunDetail {
	out, _ := runDetail(run, rs, notes)
	return out
}

// runDetail is RunDetail and the index of each task with results in its
// Tasks, by "seq/path".
func runDetail(run store.Run, rs []store.HostResult, notes []store.RunNote) (apitypes.RunDetail, map[string]int) {
	out := apitypes.RunDetail{Run: wireRun(run), Tasks: []apitypes.RunTask{}}
	idx := map[string]int{}
	for _, h := range rs { // by seq, sid
		// Notes of the tasks before this one come first (task order); a
		// block's child that targeted no host in one wave but ran in
		// another has results, and they tell.
		for len(notes) > 0 && notes[0].Seq <= h.Seq {
			if notes[0].Seq < h.Seq {
				out.Tasks = append(out.Tasks, noteTask(notes[0]))
			}
			notes = notes[1:]
		}
		key := fmt.Sprintf("%d/%s", h.Seq, h.Path)
		i, ok := idx[key]
		if !ok {
			i = len(out.Tasks)
			idx[key] = i
			out.Tasks = append(out.Tasks, apitypes.RunTask{Name: h.TaskName, Path: h.Path, Hosts: []apitypes.RunHost{}})
		}
		out.Tasks[i].Hosts = append(out.Tasks[i].Hosts, apitypes.RunHost{
			SID: h.SID, Wave: h.Wave, Status: h.Status, Changed: h.Changed, RC: h.RC,
			Stdout: h.Stdout, Stderr: h.Stderr, Msg: h.Msg, Diff: h.Diff, DurationMS: h.DurationMS,
			Data: h.Data, StartedAt: h.StartedAt, FinishedAt: h.FinishedAt,
		})
	}
	for _, n := range notes {
		out.Tasks = append(out.Tasks, noteTask(n))
	}
	return out, idx
}

// RunDetailPage is RunDetail of one page of hosts: every task that has
// results on any host is listed (with its counts over all hosts), even
// when none of the page's hosts ran it.
func RunDetailPage(run store.Run, page store.ResultPage, notes []store.RunNote) apitypes.RunDetail {
	rs := page.Results
	// Stand-ins keep the tasks that have no result on this page in place.
	for _, tc := range page.Tasks {
		rs = append(rs, store.HostResult{Seq: tc.Seq, Path: tc.Path, TaskName: tc.TaskName})
	}
	slices.SortStableFunc(rs, func(a, b store.HostResult) int {
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return cmp.Compare(a.SID, b.SID)
	})
	out, idx := runDetail(run, rs, notes)
	for _, tc := range page.Tasks {
		if i, ok := idx[fmt.Sprintf("%d/%s", tc.Seq, tc.Path)]; ok {
			out.Tasks[i].Counts = &apitypes.RunTaskCounts{Hosts: tc.Hosts, Changed: tc.Changed, Statuses: tc.Statuses}
		}
	}
	for i := range out.Tasks {
		t := &out.Tasks[i]
		kept := t.Hosts[:0]
		for _, h := range t.Hosts {
			if h.SID != "" { // not a stand-in
				kept = append(kept, h)
			}
		}
		t.Hosts = kept
	}
	out.Hosts, out.Next = page.Hosts, page.Next
	return out
}

// noteTask is the entry of a task that targeted no host.
func noteTask(n store.RunNote) apitypes.RunTask {
	return apitypes.RunTask{Name: n.TaskName, Path: n.Path, Hosts: []apitypes.RunHost{}, Note: n.Note}
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	id := r.PathValue("apply_id")
	if _, err := s.run(r.Context(), id); err != nil {
		return err
	}
	if err := s.cfg.Engine.Cancel(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, apitypes.Accepted{ApplyID: id})
	return nil
}

// runEvents streams a run's progress as Server-Sent Events (event name =
// type, data = the JSON event) and ends with the done event carrying the
// final status. A run executing on this keeper streams live; one that
// already ended gets its done event at once; one executing on another
// keeper (or a subscriber that fell too far behind) is followed through
// the store until it ends.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ctx := r.Context()
	id := r.PathValue("apply_id")
	events, stop := s.cfg.Engine.Subscribe(id)
	defer stop()
	run, err := s.run(ctx, id)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(ev apitypes.RunEvent) bool {
		b, err := json.Marshal(ev)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if run.FinishedAt != nil {
		send(doneEvent(run))
		return nil
	}
	_ = rc.Flush()
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	poll := time.NewTicker(ssePoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil // not live here (any more): follow the store
				continue
			}
			if !send(wireEvent(ev)) || ev.Type == engine.EventDone {
				return nil
			}
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-poll.C:
			if events != nil {
				continue
			}
			run, err := s.store.GetRun(ctx, id)
			if err != nil {
				return nil
			}
			if run.FinishedAt != nil {
				send(doneEvent(run))
				return nil
			}
		}
	}
}

func wireEvent(ev engine.Event) apitypes.RunEvent {
	return apitypes.RunEvent{
		Type: ev.Type, RunID: ev.RunID, Time: ev.Time, Status: ev.Status, Error: ev.Error,
		Path: ev.Path, Task: ev.Task, Wave: ev.Wave, Hosts: ev.Hosts, Result: wireHostResult(ev.Result),
	}
}

func doneEvent(run store.Run) apitypes.RunEvent {
	at := time.Now().UTC()
	if run.FinishedAt != nil {
		at = *run.FinishedAt
	}
	return apitypes.RunEvent{Type: engine.EventDone, RunID: run.ID, Time: at, Status: run.Status, Error: run.Error}
}
