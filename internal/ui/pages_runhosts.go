package ui

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// runHostView is the data of a run's drill-down page for one host: every
// result it reported in task order, and the file diffs among them.
type runHostView struct {
	Run     store.Run
	SID     string
	Status  string // the host's worst status
	Results []store.HostResult
	Diffs   []store.HostResult // results that changed a file (Diff set)
}

// runHost is the drill-down of one host of a run.
func (u *UI) runHost(r *http.Request) (view, error) {
	ctx := r.Context()
	id, sid := r.PathValue("id"), r.PathValue("sid")
	run, err := u.store.GetRun(ctx, id)
	if err != nil {
		return view{}, lookupErr(err, "run", id)
	}
	results, err := u.store.ListResults(ctx, id)
	if err != nil {
		return view{}, fmt.Errorf("results of run %s: %w", id, err)
	}
	hv := runHostView{Run: run, SID: sid}
	for _, res := range results {
		if res.SID != sid {
			continue
		}
		hv.Results = append(hv.Results, res)
		if hv.Status == "" || statusRank(res.Status) < statusRank(hv.Status) {
			hv.Status = res.Status
		}
		if res.Diff != "" {
			hv.Diffs = append(hv.Diffs, res)
		}
	}
	if len(hv.Results) == 0 {
		return view{}, domain.Errorf(domain.CodeNotFound, "Host %q reported nothing in run %s.", sid, id)
	}
	return view{Template: "runhost", Title: sid + " in run " + id, Nav: "runs", Data: hv}, nil
}

// failedHost is one host a run failed on: the first task that failed
// there.
type failedHost struct {
	SID string
	R   store.HostResult
}

// runFailedView is the data of a run's failed-hosts page.
type runFailedView struct {
	Run      store.Run
	Hosts    []failedHost
	Reported int // hosts that reported at all
}

// runFailed lists every host a run failed (or was unreachable) on, with
// the task that failed first there.
func (u *UI) runFailed(r *http.Request) (view, error) {
	ctx := r.Context()
	id := r.PathValue("id")
	run, err := u.store.GetRun(ctx, id)
	if err != nil {
		return view{}, lookupErr(err, "run", id)
	}
	results, err := u.store.ListResults(ctx, id)
	if err != nil {
		return view{}, fmt.Errorf("results of run %s: %w", id, err)
	}
	first := map[string]store.HostResult{}
	hosts := map[string]bool{}
	for _, res := range results { // by seq: the first failure of a host comes first
		hosts[res.SID] = true
		if res.Status != string(domain.StatusFailed) && res.Status != string(domain.StatusUnreachable) {
			continue
		}
		if _, ok := first[res.SID]; !ok {
			first[res.SID] = res
		}
	}
	fv := runFailedView{Run: run, Reported: len(hosts)}
	for sid, res := range first {
		fv.Hosts = append(fv.Hosts, failedHost{SID: sid, R: res})
	}
	slices.SortFunc(fv.Hosts, func(a, b failedHost) int { return cmp.Compare(a.SID, b.SID) })
	return view{Template: "runfailed", Title: "Failed hosts of run " + id, Nav: "runs", Data: fv}, nil
}
