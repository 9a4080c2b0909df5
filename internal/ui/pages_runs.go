package ui

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// Page sizes of the incarnation page and the runs list.
const (
	historyLimit = 50
	runsLimit    = 50
	allRunsLimit = 100
)

// incarnationsView is the data of the incarnations list.
type incarnationsView struct {
	Incarnations []store.Incarnation
	Counts       []statusCount
	Status       string
	Total        int
	Act          actions
}

func (u *UI) incarnations(r *http.Request) (view, error) {
	all, err := u.store.ListIncarnations(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing incarnations: %w", err)
	}
	all = visibleIncarnations(u.access(r), all)
	iv := incarnationsView{
		Counts: countBy(all, incarnationStatuses, func(i store.Incarnation) string { return i.Status }),
		Status: r.URL.Query().Get("status"),
		Total:  len(all),
		Act:    u.actionsFor(r),
	}
	for _, inc := range all {
		if iv.Status == "" || inc.Status == iv.Status {
			iv.Incarnations = append(iv.Incarnations, inc)
		}
	}
	return view{Template: "incarnations", Title: "Incarnations", Nav: "incarnations", Data: iv}, nil
}

// member is one member host of an incarnation with its soul's status
// ("unknown" when no such soul is registered).
type member struct {
	SID    string
	Status string
	Known  bool
	Soul   store.Soul
}

// historyEntry is one snapshot of the timeline with what it changed.
type historyEntry struct {
	store.Snapshot
	Hosts   int
	Totals  []statusCount // ok, changed, failed, skipped summed over hosts
	Set     []string      // state keys added or changed by this snapshot
	Removed []string      // state keys it removed
	// Changes is what changed in the state relative to the snapshot
	// before it, key by key with the values before and after.
	Changes []stateChange
}

// stateChange is one top-level state key a snapshot added, changed or
// removed, with its values (JSON, shortened) before and after.
type stateChange struct {
	Key    string
	Kind   string // added, changed, removed
	Before string
	After  string
}

// maxShownValue bounds a value shown in a state change.
const maxShownValue = 400

// shownValue renders a state value for the history's diff.
func shownValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > maxShownValue {
		return string(b[:maxShownValue]) + "…"
	}
	return string(b)
}

// stateChanges lists the changes from prev to next, by key. Without a
// previous snapshot (the oldest shown) nothing is listed: there is
// nothing to compare with.
func stateChanges(prev, next map[string]any, hasPrev bool) []stateChange {
	if !hasPrev {
		return nil
	}
	set, removed := stateDelta(prev, next)
	out := make([]stateChange, 0, len(set)+len(removed))
	for _, k := range set {
		old, ok := prev[k]
		c := stateChange{Key: k, Kind: "added", After: shownValue(next[k])}
		if ok {
			c.Kind, c.Before = "changed", shownValue(old)
		}
		out = append(out, c)
	}
	for _, k := range removed {
		out = append(out, stateChange{Key: k, Kind: "removed", Before: shownValue(prev[k])})
	}
	slices.SortFunc(out, func(a, b stateChange) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// incarnationView is the data of an incarnation's page.
type incarnationView struct {
	Inc      store.Incarnation
	Members  []member
	History  []historyEntry
	Runs     []store.Run
	Triggers []store.PendingTrigger
	// Drift is the last drift check and its schedule (SPEC §8.9).
	Drift store.Drift
	// Resumable is the locked incarnation's last run when it can be
	// resumed (SPEC §8.8), else "".
	Resumable string
	Act       actions
	// Health is the health checks panel (nil: none reported).
	Health *apitypes.IncarnationHealth
}

func (u *UI) incarnation(r *http.Request) (view, error) {
	ctx := r.Context()
	name := r.PathValue("name")
	if err := u.requireRead(r, auth.Object{Kind: auth.ObjIncarnation, Name: name}); err != nil {
		return view{}, err
	}
	inc, err := u.store.GetIncarnation(ctx, name)
	if err != nil {
		return view{}, lookupErr(err, "incarnation", name)
	}
	souls, err := u.store.GetSouls(ctx, inc.Members)
	if err != nil {
		return view{}, fmt.Errorf("reading the members: %w", err)
	}
	hist, err := u.store.ListHistory(ctx, name, historyLimit+1)
	if err != nil {
		return view{}, fmt.Errorf("history of %s: %w", name, err)
	}
	runs, err := u.store.ListRuns(ctx, name, runsLimit)
	if err != nil {
		return view{}, fmt.Errorf("runs of %s: %w", name, err)
	}
	trig, err := u.store.ListTriggers(ctx, name, "")
	if err != nil {
		return view{}, fmt.Errorf("pending triggers of %s: %w", name, err)
	}
	bySID := make(map[string]store.Soul, len(souls))
	for _, s := range souls {
		bySID[s.SID] = s
	}
	drift, err := u.store.GetDrift(ctx, name)
	if err != nil {
		return view{}, fmt.Errorf("drift of %s: %w", name, err)
	}
	iv := incarnationView{Inc: inc, History: timeline(hist, historyLimit), Runs: runs, Triggers: trig, Drift: drift,
		Resumable: resumable(inc, runs), Act: u.actionsOn(r, auth.Object{Kind: auth.ObjIncarnation, Name: name})}
	for _, sid := range inc.Members {
		s, ok := bySID[sid]
		m := member{SID: sid, Status: "unknown", Known: ok, Soul: s}
		if ok {
			m.Status = s.Status
		}
		iv.Members = append(iv.Members, m)
	}
	if iv.Health, err = u.incarnationHealth(ctx, name); err != nil {
		return view{}, err
	}
	return view{Template: "incarnation", Title: "Incarnation " + name, Nav: "incarnations", Data: iv}, nil
}

// timeline turns snapshots (newest first) into at most limit entries, each
// with the state keys it changed relative to the snapshot before it. The
// caller fetches one snapshot more than it shows so the oldest shown entry
// still has a predecessor to compare with.
func timeline(snaps []store.Snapshot, limit int) []historyEntry {
	out := make([]historyEntry, 0, min(len(snaps), limit))
	for i, s := range snaps {
		if i == limit {
			break
		}
		var prev map[string]any
		if i+1 < len(snaps) {
			prev = snaps[i+1].State
		}
		e := historyEntry{Snapshot: s, Hosts: summaryCount(s.Summary, "hosts")}
		e.Set, e.Removed = stateDelta(prev, s.State)
		// The oldest snapshot of a whole history compares with the empty
		// state; the oldest shown of a longer one has its predecessor.
		e.Changes = stateChanges(prev, s.State, i+1 < len(snaps) || len(snaps) <= limit)
		totals := map[string]int{}
		for k := range s.Summary {
			totals[k] = summaryCount(s.Summary, k)
		}
		for _, k := range []string{"ok", "changed", "failed", "skipped", "unknown"} {
			if totals[k] > 0 {
				e.Totals = append(e.Totals, statusCount{k, totals[k]})
			}
		}
		out = append(out, e)
	}
	return out
}

// summaryCount reads one count of a snapshot's summary (numbers read back
// as float64).
func summaryCount(summary map[string]any, key string) int {
	f, _ := summary[key].(float64)
	return int(f)
}

// stateDelta lists the top-level keys of next that are new or differ from
// prev, and the keys of prev that next lacks.
func stateDelta(prev, next map[string]any) (set, removed []string) {
	for _, k := range slices.Sorted(maps.Keys(next)) {
		old, ok := prev[k]
		if !ok || !sameJSON(old, next[k]) {
			set = append(set, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := next[k]; !ok {
			removed = append(removed, k)
		}
	}
	return set, removed
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// runStatuses are the run statuses the runs list filters by.
var runStatuses = []string{store.RunPending, store.RunRunning, store.RunSucceeded, store.RunFailed,
	store.RunCancelled, store.RunAborted}

// runsView is the data of the runs list.
type runsView struct {
	Runs        []store.Run
	Counts      []statusCount // every run by status
	Incarnation string
	Status      string
	Scenario    string
	Statuses    []string
	// Before is the cursor the page starts at ("" the newest); Next is
	// the cursor of the next page ("" on the last).
	Before string
	Next   string
}

// runs lists the runs newest first, allRunsLimit at a time, filtered by
// incarnation, status and scenario in the store.
func (u *UI) runs(r *http.Request) (view, error) {
	q := r.URL.Query()
	rv := runsView{Incarnation: q.Get("incarnation"), Status: q.Get("status"), Scenario: q.Get("scenario"),
		Before: q.Get("before"), Statuses: runStatuses}
	rq := store.RunQuery{Incarnation: rv.Incarnation, Status: rv.Status, Scenario: rv.Scenario, Before: rv.Before, Limit: allRunsLimit}
	if acc := u.access(r); acc != nil && !acc.AllowsKeeper(auth.PermRead) {
		incs, err := u.store.ListIncarnations(r.Context())
		if err != nil {
			return view{}, fmt.Errorf("listing incarnations: %w", err)
		}
		runVisibility(acc, incs, &rq)
	}
	page, err := u.store.PageRuns(r.Context(), rq)
	if err != nil {
		if domain.ErrorCode(err) == domain.CodeInvalid {
			return view{}, err
		}
		return view{}, fmt.Errorf("listing runs: %w", err)
	}
	counts, err := u.store.CountRuns(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("counting runs: %w", err)
	}
	rv.Runs, rv.Next, rv.Counts = page.Runs, page.Next, statusCounts(counts, runStatuses)
	return view{Template: "runs", Title: "Runs", Nav: "runs", Data: rv}, nil
}

// PageURL is the runs list URL of the page at cursor before, keeping the
// filters.
func (rv runsView) PageURL(before string) string {
	v := url.Values{}
	for k, val := range map[string]string{"incarnation": rv.Incarnation, "status": rv.Status, "scenario": rv.Scenario, "before": before} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if len(v) == 0 {
		return Prefix + "/runs"
	}
	return Prefix + "/runs?" + v.Encode()
}

// runView is the data of a run's page and of its live fragment.
type runView struct {
	Run  store.Run
	Grid grid
	Live bool // unfinished: the page refreshes itself
	SSE  bool // this keeper can push progress events
	Act  actions
}

// loadRun reads a run, its results and (while it is live) the members
// expected to report.
func (u *UI) loadRun(r *http.Request) (runView, error) {
	ctx := r.Context()
	id := r.PathValue("id")
	if err := u.requireRead(r, auth.Object{Kind: auth.ObjRun, Name: id}); err != nil {
		return runView{}, err
	}
	run, err := u.store.GetRun(ctx, id)
	if err != nil {
		return runView{}, lookupErr(err, "run", id)
	}
	results, err := u.store.ListResults(ctx, id)
	if err != nil {
		return runView{}, fmt.Errorf("results of run %s: %w", id, err)
	}
	notes, err := u.store.ListRunNotes(ctx, id)
	if err != nil {
		return runView{}, fmt.Errorf("notes of run %s: %w", id, err)
	}
	rv := runView{Run: run, Live: !finished(run), SSE: u.cfg.Events != nil}
	var members []string
	if rv.Live {
		inc, err := u.store.GetIncarnation(ctx, run.Incarnation)
		if err != nil {
			return runView{}, lookupErr(err, "incarnation", run.Incarnation)
		}
		members = inc.Members
	}
	rv.Grid = buildGrid(results, members, rv.Live)
	rv.Grid.addNotes(notes)
	if len(rv.Grid.Hosts) > groupThreshold {
		rv.Grid.group(results, members, rv.Live)
	}
	rv.Act = u.actionsOn(r, auth.Object{Kind: auth.ObjRun, Name: id})
	return rv, nil
}

func (u *UI) run(r *http.Request) (view, error) {
	rv, err := u.loadRun(r)
	if err != nil {
		return view{}, err
	}
	return view{Template: "run", Title: "Run " + rv.Run.ID, Nav: "runs", Data: rv}, nil
}

// runLive renders the refreshable part of the run page.
func (u *UI) runLive(w http.ResponseWriter, r *http.Request) error {
	rv, err := u.loadRun(r)
	if err != nil {
		return err
	}
	return u.renderFragment(w, "run", "run-live", rv)
}

// resumable is the run a locked incarnation can resume: its last normal
// run, when it failed, was cancelled or aborted.
func resumable(inc store.Incarnation, runs []store.Run) string {
	if inc.Status != store.IncarnationErrorLocked || inc.ActiveRun != "" {
		return ""
	}
	for _, r := range runs {
		if r.Check {
			continue
		}
		switch r.Status {
		case store.RunFailed, store.RunCancelled, store.RunAborted:
			return r.ID
		}
		return ""
	}
	return ""
}
