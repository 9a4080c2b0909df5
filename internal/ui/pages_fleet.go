package ui

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// recentLimit is how many runs and tasks the dashboard lists.
const recentLimit = 10

// Status orders used for counts, the usual state first.
var (
	soulStatuses        = []string{store.SoulConnected, store.SoulDisconnected, store.SoulPending, store.SoulRejected}
	incarnationStatuses = []string{store.IncarnationReady, store.IncarnationApplying, store.IncarnationErrorLocked}
)

// countBy counts items by status, listing the known statuses in order (with
// zeros) and then any other status found.
func countBy[T any](items []T, known []string, status func(T) string) []statusCount {
	n := map[string]int{}
	for _, it := range items {
		n[status(it)]++
	}
	return statusCounts(n, known)
}

// statusCounts lists the counts n (by status, consumed) as countBy does.
func statusCounts(n map[string]int, known []string) []statusCount {
	out := make([]statusCount, 0, len(known))
	for _, s := range known {
		out = append(out, statusCount{s, n[s]})
		delete(n, s)
	}
	for _, s := range slices.Sorted(maps.Keys(n)) {
		out = append(out, statusCount{s, n[s]})
	}
	return out
}

// lookupErr turns a store miss into a friendly not-found error and wraps
// anything else.
func lookupErr(err error, kind, key string) error {
	if errors.Is(err, domain.ErrNotFound) || domain.ErrorCode(err) == domain.CodeNotFound {
		return domain.Errorf(domain.CodeNotFound, "There is no %s %q.", kind, key)
	}
	return fmt.Errorf("reading %s %s: %w", kind, key, err)
}

// dashboardView is the data of the dashboard.
type dashboardView struct {
	Souls        []statusCount
	SoulTotal    int
	Incarnations []statusCount
	IncTotal     int
	Locked       []store.Incarnation
	Drifted      []string // incarnations whose last drift check found drift
	Services     int
	Runs         []store.Run
	Tasks        []store.CheckerTask
}

func (u *UI) dashboard(r *http.Request) (view, error) {
	ctx := r.Context()
	soulCounts, err := u.store.CountSouls(ctx)
	if err != nil {
		return view{}, fmt.Errorf("counting souls: %w", err)
	}
	soulTotal := 0
	for _, c := range soulCounts {
		soulTotal += c
	}
	incs, err := u.store.ListIncarnations(ctx)
	if err != nil {
		return view{}, fmt.Errorf("listing incarnations: %w", err)
	}
	svcs, err := u.store.ListServices(ctx)
	if err != nil {
		return view{}, fmt.Errorf("listing services: %w", err)
	}
	runs, err := u.store.ListRuns(ctx, "", recentLimit)
	if err != nil {
		return view{}, fmt.Errorf("listing runs: %w", err)
	}
	tasks, err := u.store.ListCheckerTasks(ctx, "", recentLimit)
	if err != nil {
		return view{}, fmt.Errorf("listing checker tasks: %w", err)
	}
	d := dashboardView{
		Souls:        statusCounts(soulCounts, soulStatuses),
		SoulTotal:    soulTotal,
		Incarnations: countBy(incs, incarnationStatuses, func(i store.Incarnation) string { return i.Status }),
		IncTotal:     len(incs),
		Services:     len(svcs),
		Runs:         runs,
		Tasks:        tasks,
	}
	for _, inc := range incs {
		if inc.Status == store.IncarnationErrorLocked {
			d.Locked = append(d.Locked, inc)
		}
	}
	drift, err := u.store.ListDrift(ctx)
	if err != nil {
		return view{}, fmt.Errorf("listing drift: %w", err)
	}
	for _, dr := range drift {
		if dr.Report != nil && dr.Report.Drifted {
			d.Drifted = append(d.Drifted, dr.Incarnation)
		}
	}
	return view{Template: "dashboard", Title: "Dashboard", Nav: "dashboard", Data: d}, nil
}

// soulsView is the data of the souls list.
type soulsView struct {
	Souls    []store.Soul
	Total    int
	Counts   []statusCount
	Covens   []string
	Status   string
	Coven    string
	Query    string
	Statuses []string
	Act      actions
}

func (u *UI) souls(r *http.Request) (view, error) {
	all, err := u.store.ListSouls(r.Context(), store.SoulFilter{})
	if err != nil {
		return view{}, fmt.Errorf("listing souls: %w", err)
	}
	q := r.URL.Query()
	sv := soulsView{
		Total:    len(all),
		Counts:   countBy(all, soulStatuses, func(s store.Soul) string { return s.Status }),
		Status:   q.Get("status"),
		Coven:    q.Get("coven"),
		Query:    strings.TrimSpace(q.Get("q")),
		Statuses: soulStatuses,
		Act:      u.actionsFor(r),
	}
	covens := map[string]bool{}
	for _, s := range all {
		for _, c := range s.Covens {
			covens[c] = true
		}
		if sv.Status != "" && s.Status != sv.Status ||
			sv.Coven != "" && !slices.Contains(s.Covens, sv.Coven) ||
			sv.Query != "" && !strings.Contains(strings.ToLower(s.SID), strings.ToLower(sv.Query)) {
			continue
		}
		sv.Souls = append(sv.Souls, s)
	}
	sv.Covens = slices.Sorted(maps.Keys(covens))
	return view{Template: "souls", Title: "Souls", Nav: "souls", Data: sv}, nil
}

// soulView is the data of a soul's page.
type soulView struct {
	Soul         store.Soul
	Facts        []fact
	Incarnations []store.Incarnation
	Act          actions
}

func (u *UI) soul(r *http.Request) (view, error) {
	sid := r.PathValue("sid")
	s, err := u.store.GetSoul(r.Context(), sid)
	if err != nil {
		return view{}, lookupErr(err, "soul", sid)
	}
	incs, err := u.store.ListIncarnations(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing incarnations: %w", err)
	}
	sv := soulView{Soul: s, Facts: flattenFacts(s.Facts()), Act: u.actionsFor(r)}
	for _, inc := range incs {
		if slices.Contains(inc.Members, sid) {
			sv.Incarnations = append(sv.Incarnations, inc)
		}
	}
	return view{Template: "soul", Title: "Soul " + sid, Nav: "souls", Data: sv}, nil
}

// servicesView is the data of the services list.
type servicesView struct {
	Services []store.Service
	Uses     map[string]int // incarnations per service
}

func (u *UI) services(r *http.Request) (view, error) {
	svcs, err := u.store.ListServices(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing services: %w", err)
	}
	incs, err := u.store.ListIncarnations(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing incarnations: %w", err)
	}
	for i := range svcs {
		svcs[i].Git = auth.RedactURL(svcs[i].Git)
	}
	sv := servicesView{Services: svcs, Uses: map[string]int{}}
	for _, inc := range incs {
		sv.Uses[inc.Service]++
	}
	return view{Template: "services", Title: "Services", Nav: "services", Data: sv}, nil
}

// serviceView is the data of a service's page.
type serviceView struct {
	Service      store.Service
	Incarnations []store.Incarnation
}

func (u *UI) service(r *http.Request) (view, error) {
	name := r.PathValue("name")
	s, err := u.store.GetService(r.Context(), name)
	if err != nil {
		return view{}, lookupErr(err, "service", name)
	}
	incs, err := u.store.ListIncarnations(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing incarnations: %w", err)
	}
	// The catalog needs a URL's password; readers of the page do not.
	s.Git = auth.RedactURL(s.Git)
	sv := serviceView{Service: s}
	for _, inc := range incs {
		if inc.Service == name {
			sv.Incarnations = append(sv.Incarnations, inc)
		}
	}
	return view{Template: "service", Title: "Service " + name, Nav: "services", Data: sv}, nil
}
