package ui

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
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
	Locked       []string // names of the incarnations locked after a failure
	Drifted      []string // incarnations whose last drift check found drift
	Services     int
	Runs         []store.Run
	Tasks        []store.CheckerTask
	Health       apitypes.HealthOverview
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
	incCounts, err := u.store.CountIncarnations(ctx)
	if err != nil {
		return view{}, fmt.Errorf("counting incarnations: %w", err)
	}
	incTotal := 0
	for _, c := range incCounts {
		incTotal += c
	}
	locked, err := u.store.IncarnationNames(ctx, store.IncarnationErrorLocked, recentLimit*5)
	if err != nil {
		return view{}, fmt.Errorf("listing locked incarnations: %w", err)
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
		Incarnations: statusCounts(incCounts, incarnationStatuses),
		IncTotal:     incTotal,
		Locked:       locked,
		Services:     len(svcs),
		Runs:         runs,
		Tasks:        tasks,
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
	if d.Health, err = u.healthOverview(ctx); err != nil {
		return view{}, err
	}
	return view{Template: "dashboard", Title: "Dashboard", Nav: "dashboard", Data: d}, nil
}

// soulsView is the data of the souls list.
type soulsView struct {
	Souls     []store.Soul // this page's souls
	Total     int          // every registered soul
	Matching  int          // souls matching the filters
	Counts    []statusCount
	Covens    []string
	Status    string
	Coven     string
	Prefix    string // SID starts with
	Fact      string // a soulprint fact path, e.g. os.family
	FactValue string
	Statuses  []string
	// After is the SID the page starts after ("" the first page); Next
	// is the After of the next page ("" on the last).
	After string
	Next  string
	First int // 1-based position of the page's first soul
	Act   actions
}

// souls lists the souls a page of SoulsPageSize at a time, filtered by
// status, coven, SID prefix and a fact — all in the store, which reads
// only the page (keyset on the SID, so paging is stable while souls
// join) and counts the matching souls.
func (u *UI) souls(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	sv := soulsView{
		Status:    q.Get("status"),
		Coven:     strings.TrimSpace(q.Get("coven")),
		Prefix:    strings.TrimSpace(q.Get("sid")),
		Fact:      strings.TrimSpace(q.Get("fact")),
		FactValue: strings.TrimSpace(q.Get("value")),
		After:     q.Get("after"),
		Statuses:  soulStatuses,
		Act:       u.actionsFor(r),
	}
	if n, err := strconv.Atoi(q.Get("pos")); err == nil && n > 0 && sv.After != "" {
		sv.First = n - 1
	}
	counts, err := u.store.CountSouls(ctx)
	if err != nil {
		return view{}, fmt.Errorf("counting souls: %w", err)
	}
	for _, st := range soulStatuses {
		sv.Total += counts[st]
		sv.Counts = append(sv.Counts, statusCount{Status: st, N: counts[st]})
	}
	sq := store.SoulQuery{Status: sv.Status, SIDPrefix: sv.Prefix, Fact: sv.Fact, FactValue: sv.FactValue,
		After: sv.After, Limit: u.cfg.SoulsPageSize, Count: true}
	if sv.Coven != "" {
		sq.Covens = []string{sv.Coven}
	}
	if sv.Fact == "" {
		sq.FactValue = ""
	}
	soulVisibility(u.access(r), &sq)
	page, err := u.store.PageSouls(ctx, sq)
	if err != nil {
		if domain.ErrorCode(err) == domain.CodeInvalid {
			return view{}, err
		}
		return view{}, fmt.Errorf("listing souls: %w", err)
	}
	sv.Souls, sv.Next, sv.Matching = page.Souls, page.Next, page.Total
	sv.First++
	if sv.Covens, err = u.store.ListCovens(ctx); err != nil {
		return view{}, fmt.Errorf("listing covens: %w", err)
	}
	if sv.Coven != "" && !slices.Contains(sv.Covens, sv.Coven) {
		sv.Covens = append(sv.Covens, sv.Coven)
		slices.Sort(sv.Covens)
	}
	return view{Template: "souls", Title: "Souls", Nav: "souls", Data: sv}, nil
}

// PageURL is the souls list URL of the page after after, keeping the
// filters; pos is the 1-based position of that page's first soul.
func (sv soulsView) PageURL(after string, pos int) string {
	v := url.Values{}
	for k, val := range map[string]string{"status": sv.Status, "coven": sv.Coven, "sid": sv.Prefix,
		"fact": sv.Fact, "value": sv.FactValue, "after": after} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if after != "" && pos > 1 {
		v.Set("pos", strconv.Itoa(pos))
	}
	if len(v) == 0 {
		return Prefix + "/souls"
	}
	return Prefix + "/souls?" + v.Encode()
}

// Last is the 1-based position of the page's last soul.
func (sv soulsView) Last() int { return sv.First + len(sv.Souls) - 1 }

// NextPos is the position of the next page's first soul.
func (sv soulsView) NextPos() int { return sv.Last() + 1 }

// soulView is the data of a soul's page.
type soulView struct {
	Soul         store.Soul
	Facts        []fact
	Incarnations []store.Incarnation
	Act          actions
	Vitals       *apitypes.SoulVitals
}

func (u *UI) soul(r *http.Request) (view, error) {
	sid := r.PathValue("sid")
	if err := u.requireRead(r, auth.Object{Kind: auth.ObjSoul, Name: sid}); err != nil {
		return view{}, err
	}
	s, err := u.store.GetSoul(r.Context(), sid)
	if err != nil {
		return view{}, lookupErr(err, "soul", sid)
	}
	incs, err := u.store.ListIncarnations(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing incarnations: %w", err)
	}
	sv := soulView{Soul: s, Facts: flattenFacts(s.Facts()), Act: u.actionsOn(r, auth.Object{Kind: auth.ObjSoul, Name: sid})}
	for _, inc := range incs {
		if slices.Contains(inc.Members, sid) {
			sv.Incarnations = append(sv.Incarnations, inc)
		}
	}
	if sv.Vitals, err = u.soulVitals(r.Context(), sid); err != nil {
		return view{}, err
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
	// Warnings is the advice validating the service's commit found (an
	// unquoted ${ input.x } in a shell command line, …).
	Warnings dsl.Problems
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
	if u.cfg.Services != nil {
		// The warnings are a courtesy: a commit that cannot be opened now
		// does not fail the page.
		if d, err := u.cfg.Services.Open(r.Context(), name, s.Commit); err == nil {
			sv.Warnings = d.Warnings
		} else {
			u.log.WarnContext(r.Context(), "ui: service warnings unavailable", "service", name, "err", err)
		}
	}
	return view{Template: "service", Title: "Service " + name, Nav: "services", Data: sv}, nil
}
