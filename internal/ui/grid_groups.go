package ui

import (
	"cmp"
	"maps"
	"slices"

	"github.com/soulstack/soulstack/internal/store"
)

// Grouping: a run with more than groupThreshold hosts is not drawn as one
// column per host; the run page shows hosts grouped by wave and status
// with counts, each task's cells as counts, the failed hosts, and a
// drill-down page per host.
const (
	groupThreshold = 50
	// groupShown is how many hosts a group lists by name; the rest are
	// counted (the failed-hosts view and the drill-down reach every one).
	groupShown = 100
)

// hostGroup is the hosts of one wave that ended in one status.
type hostGroup struct {
	Wave   int
	Status string
	N      int
	Hosts  []string // the first groupShown, sorted
}

// More is how many hosts of the group are not listed by name.
func (g hostGroup) More() int { return g.N - len(g.Hosts) }

// hostOutcome is one host's place in a run: its wave (the first it ran
// in) and its worst status.
type hostOutcome struct {
	Wave   int
	Status string
}

// outcomes sums results (and, live, the hosts still expected) per host.
func outcomes(results []store.HostResult, pending []string, live bool) map[string]hostOutcome {
	out := map[string]hostOutcome{}
	for _, r := range results {
		o, ok := out[r.SID]
		if !ok {
			out[r.SID] = hostOutcome{Wave: r.Wave, Status: r.Status}
			continue
		}
		o.Wave = min(o.Wave, r.Wave)
		if statusRank(r.Status) < statusRank(o.Status) {
			o.Status = r.Status
		}
		out[r.SID] = o
	}
	if live {
		for _, sid := range pending {
			if _, ok := out[sid]; !ok {
				out[sid] = hostOutcome{Status: "pending"}
			}
		}
	}
	return out
}

// group turns the grid into its grouped form: hosts by wave and status,
// each row's cells summed into counts (the cells themselves dropped).
func (g *grid) group(results []store.HostResult, pending []string, live bool) {
	g.Grouped = true
	byKey := map[hostOutcome]*hostGroup{}
	for sid, o := range outcomes(results, pending, live) {
		hg := byKey[o]
		if hg == nil {
			hg = &hostGroup{Wave: o.Wave, Status: o.Status}
			byKey[o] = hg
		}
		hg.N++
		hg.Hosts = append(hg.Hosts, sid)
	}
	for _, hg := range byKey {
		slices.Sort(hg.Hosts)
		hg.Hosts = hg.Hosts[:min(len(hg.Hosts), groupShown)]
		g.Groups = append(g.Groups, *hg)
	}
	slices.SortFunc(g.Groups, func(a, b hostGroup) int {
		return cmp.Or(cmp.Compare(a.Wave, b.Wave), cmp.Compare(statusRank(a.Status), statusRank(b.Status)),
			cmp.Compare(a.Status, b.Status))
	})
	for i := range g.Rows {
		row := &g.Rows[i]
		n := map[string]int{}
		for _, c := range row.Cells {
			if c.Status != "none" {
				n[c.Status]++
			}
		}
		for _, s := range statusOrder {
			if n[s] > 0 {
				row.Counts = append(row.Counts, statusCount{s, n[s]})
				delete(n, s)
			}
		}
		for _, s := range slices.Sorted(maps.Keys(n)) {
			row.Counts = append(row.Counts, statusCount{s, n[s]})
		}
		row.Cells = nil
	}
}
