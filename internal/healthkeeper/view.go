package healthkeeper

import (
	"sort"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/health"
	"github.com/soulstack/soulstack/internal/store"
)

// View groups an incarnation's stored states by check, marks hosts silent
// for staleAfter stale, and counts by status. Hosts within a check come
// worst first, then by SID.
func View(incarnation string, states []store.HealthState, trans []store.HealthTransition, now time.Time, staleAfter time.Duration) apitypes.IncarnationHealth {
	out := apitypes.IncarnationHealth{Incarnation: incarnation, Counts: map[string]int{}, Checks: []apitypes.HealthCheck{},
		Transitions: make([]apitypes.HealthTransition, 0, len(trans)), StaleAfter: apitypes.Duration(staleAfter)}
	for _, tr := range trans { // the wire form: no store record crosses the API edge
		out.Transitions = append(out.Transitions, apitypes.HealthTransition{ID: tr.ID, Incarnation: tr.Incarnation,
			Check: tr.Check, SID: tr.SID, From: tr.From, To: tr.To, Message: tr.Message, At: tr.At})
	}
	idx := map[string]int{}
	for _, st := range states {
		i, ok := idx[st.Check]
		if !ok {
			i = len(out.Checks)
			idx[st.Check] = i
			out.Checks = append(out.Checks, apitypes.HealthCheck{Name: st.Check, Counts: map[string]int{}, Hosts: []apitypes.HealthHost{}})
		}
		status := EffectiveStatus(st, now, staleAfter)
		c := &out.Checks[i]
		c.Counts[status]++
		out.Counts[status]++
		c.Hosts = append(c.Hosts, apitypes.HealthHost{SID: st.SID, Status: status, LastStatus: st.Status, Message: st.Message,
			Perfdata: st.Perfdata, Since: st.Since, CheckedAt: st.CheckedAt, ReportedAt: st.ReportedAt, Flaps: st.Flaps})
	}
	for i := range out.Checks {
		hs := out.Checks[i].Hosts
		sort.SliceStable(hs, func(a, b int) bool {
			sa, sb := health.Severity(hs[a].Status), health.Severity(hs[b].Status)
			if sa != sb {
				return sa > sb
			}
			return hs[a].SID < hs[b].SID
		})
	}
	sort.Slice(out.Checks, func(a, b int) bool { return out.Checks[a].Name < out.Checks[b].Name })
	return out
}

// Overview counts every incarnation's states by status, the incarnations
// with anything not OK first, then by name.
func Overview(states []store.HealthState, now time.Time, staleAfter time.Duration) apitypes.HealthOverview {
	byInc := map[string]map[string]int{}
	var names []string
	for _, st := range states {
		c := byInc[st.Incarnation]
		if c == nil {
			c = map[string]int{}
			byInc[st.Incarnation] = c
			names = append(names, st.Incarnation)
		}
		c[EffectiveStatus(st, now, staleAfter)]++
	}
	worst := func(c map[string]int) int {
		w := 0
		for s, n := range c {
			if n > 0 {
				w = max(w, health.Severity(s))
			}
		}
		return w
	}
	sort.Slice(names, func(a, b int) bool {
		wa, wb := worst(byInc[names[a]]), worst(byInc[names[b]])
		if wa != wb {
			return wa > wb
		}
		return names[a] < names[b]
	})
	out := apitypes.HealthOverview{Incarnations: []apitypes.IncarnationHealthCounts{}}
	for _, n := range names {
		out.Incarnations = append(out.Incarnations, apitypes.IncarnationHealthCounts{Incarnation: n, Counts: byInc[n]})
	}
	return out
}
