package ui

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// grid is a run's tasks × hosts table: one row per task (by Seq), one
// column per host.
type grid struct {
	Hosts  []string
	Rows   []gridRow
	Counts []statusCount // cells by status, in statusOrder
	Failed []string      // hosts with a failed or unreachable task
	// Grouped: more than groupThreshold hosts; Groups holds them by wave
	// and status, and each row has Counts instead of Cells.
	Grouped bool
	Groups  []hostGroup
}

// gridRow is one task of the run.
type gridRow struct {
	Seq      int
	Path     string
	Task     string
	Depth    int    // block nesting: "2.1" is 1
	Status   string // the row's worst cell status
	Waves    []int  // distinct waves the task ran in, ascending
	Duration int64  // longest cell, ms
	Cells    []gridCell
	Counts   []statusCount // grouped grid: the row's cells by status
	// Note says why a task that targeted no host did (SPEC §6); its
	// cells are all empty.
	Note string
}

// gridCell is one host's result of one task, or an empty cell.
type gridCell struct {
	SID    string
	ID     string // DOM id of the cell's details element (kept open across refreshes)
	Status string // the result's status; "pending" or "none" when there is no result
	R      *store.HostResult
}

// statusCount is how many cells have a status.
type statusCount struct {
	Status string
	N      int
}

// statusOrder ranks host statuses from worst to best; a row shows its
// worst.
var statusOrder = []string{
	string(domain.StatusFailed),
	string(domain.StatusUnreachable),
	string(domain.StatusRunning),
	string(domain.StatusPending),
	string(domain.StatusChanged),
	string(domain.StatusOK),
	string(domain.StatusUnknown),
	string(domain.StatusSkipped),
}

func statusRank(s string) int {
	for i, o := range statusOrder {
		if o == s {
			return i
		}
	}
	return len(statusOrder) // unknown statuses sort last but still show
}

// buildGrid lays out results. While the run is unfinished, pending lists
// the hosts expected to report (the incarnation's members): they get a
// column, and a missing result is "pending" rather than "none" (the task
// did not run there).
func buildGrid(results []store.HostResult, pending []string, live bool) grid {
	hostSet := map[string]bool{}
	for _, r := range results {
		hostSet[r.SID] = true
	}
	if live {
		for _, sid := range pending {
			hostSet[sid] = true
		}
	}
	g := grid{Hosts: slices.Sorted(maps.Keys(hostSet))}
	col := make(map[string]int, len(g.Hosts))
	for i, h := range g.Hosts {
		col[h] = i
	}

	counts := map[string]int{}
	failed := map[string]bool{}
	rowOf := map[int]int{}
	for i := range results {
		r := &results[i]
		ri, ok := rowOf[r.Seq]
		if !ok {
			ri = len(g.Rows)
			rowOf[r.Seq] = ri
			g.Rows = append(g.Rows, newRow(r, g.Hosts, live))
		}
		row := &g.Rows[ri]
		c := &row.Cells[col[r.SID]]
		c.R, c.Status = r, r.Status
		row.Duration = max(row.Duration, r.DurationMS)
		if !slices.Contains(row.Waves, r.Wave) {
			row.Waves = append(row.Waves, r.Wave)
		}
		if r.Status == string(domain.StatusFailed) || r.Status == string(domain.StatusUnreachable) {
			failed[r.SID] = true
		}
	}
	slices.SortStableFunc(g.Rows, func(a, b gridRow) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := range g.Rows {
		row := &g.Rows[i]
		slices.Sort(row.Waves)
		worst := ""
		for _, c := range row.Cells {
			if c.Status == "none" {
				continue
			}
			counts[c.Status]++
			if worst == "" || statusRank(c.Status) < statusRank(worst) {
				worst = c.Status
			}
		}
		row.Status = worst
	}
	for _, s := range statusOrder {
		if counts[s] > 0 {
			g.Counts = append(g.Counts, statusCount{s, counts[s]})
			delete(counts, s)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		g.Counts = append(g.Counts, statusCount{s, counts[s]})
	}
	g.Failed = slices.Sorted(maps.Keys(failed))
	return g
}

// newRow starts the row of r's task with an empty cell per host.
func newRow(r *store.HostResult, hosts []string, live bool) gridRow {
	empty := "none"
	if live {
		empty = string(domain.StatusPending)
	}
	row := gridRow{Seq: r.Seq, Path: r.Path, Task: r.TaskName, Depth: strings.Count(r.Path, "."), Cells: make([]gridCell, len(hosts))}
	if row.Task == "" {
		row.Task = "task " + r.Path
	}
	for i, h := range hosts {
		row.Cells[i] = gridCell{SID: h, Status: empty, ID: fmt.Sprintf("c%d-%x", r.Seq, h)}
	}
	return row
}

// addNotes adds a row for each task that targeted no host (it has no
// results, so buildGrid made none), in task order, its note saying why.
func (g *grid) addNotes(notes []store.RunNote) {
	seen := map[int]bool{}
	for _, r := range g.Rows {
		seen[r.Seq] = true
	}
	added := false
	for _, n := range notes {
		if seen[n.Seq] {
			continue // it ran in another wave of its block: its results tell
		}
		row := newRow(&store.HostResult{Seq: n.Seq, Path: n.Path, TaskName: n.TaskName}, g.Hosts, false)
		row.Note, row.Status = n.Note, "none"
		g.Rows = append(g.Rows, row)
		added = true
	}
	if added {
		slices.SortStableFunc(g.Rows, func(a, b gridRow) int { return cmp.Compare(a.Seq, b.Seq) })
	}
}
