package store

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Page bounds of PageSouls and PageRuns: a query without a limit reads
// DefaultPageLimit rows, and none reads more than MaxPageLimit.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// PageLimit bounds limit: 0 or less is DefaultPageLimit, more than
// MaxPageLimit is MaxPageLimit.
func PageLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultPageLimit
	case limit > MaxPageLimit:
		return MaxPageLimit
	}
	return limit
}

// SoulQuery selects one page of souls, sorted by SID. Empty fields match
// everything.
type SoulQuery struct {
	Status    string
	Covens    []string // souls carrying all of them
	SIDPrefix string
	// Fact is a dotted path into the soulprint ("os.family"); with it,
	// only souls whose fact, as text, equals FactValue match (booleans are
	// "true"/"false", numbers as JSON writes them). An empty FactValue
	// matches souls that have the fact at all.
	Fact      string
	FactValue string
	// Visible, when set, keeps only the souls carrying at least one of
	// VisibleCovens (none when it is empty): what an Archon whose read
	// grants are on covens may see (issue 34).
	Visible       bool
	VisibleCovens []string
	// After is the cursor: the SID the previous page ended with.
	After string
	Limit int // see PageLimit
	// Count asks for SoulPage.Total as well (one more query).
	Count bool
}

// factKeyRE is what one key of a fact path may hold.
var factKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// FactPath splits and checks a dotted fact path.
func FactPath(fact string) ([]string, error) {
	keys := strings.Split(fact, ".")
	for _, k := range keys {
		if !factKeyRE.MatchString(k) {
			return nil, fmt.Errorf("fact %q: each dot-separated key may hold only letters, digits, '_' and '-'", fact)
		}
	}
	return keys, nil
}

// SoulPage is one page of souls; Next is the cursor of the next page
// (the After of the following query), "" on the last page.
type SoulPage struct {
	Souls []Soul `json:"souls"`
	Next  string `json:"next,omitempty"`
	// Total is how many souls match the filters on every page, when the
	// query asked for it (Count).
	Total int `json:"total,omitempty"`
}

// RunQuery selects one page of runs, newest first. Empty fields match
// everything.
type RunQuery struct {
	Incarnation string
	Status      string
	Scenario    string
	// Visible, when set, keeps only the runs of VisibleIncarnations (none
	// when it is empty): what an Archon with scoped read grants may see.
	Visible             bool
	VisibleIncarnations []string
	// Before is the cursor: the Next of the previous page.
	Before string
	Limit  int // see PageLimit
}

// RunPage is one page of runs; Next is the cursor of the next page, ""
// on the last page.
type RunPage struct {
	Runs []Run  `json:"runs"`
	Next string `json:"next,omitempty"`
}

// RunCursor is the cursor that follows r in a newest-first run list: its
// apply_id; the next page holds the runs recorded before r (a cursor whose
// run was pruned since ends the list).
func RunCursor(r Run) string {
	return "~" + r.ID
}

// ParseRunCursor returns the run id of a RunCursor (cursors of older
// keepers, "<microseconds>~<id>", are read too).
func ParseRunCursor(c string) (string, error) {
	if id, ok := strings.CutPrefix(c, "~"); ok && id != "" {
		return id, nil
	}
	us, id, ok := strings.Cut(c, "~")
	if _, err := strconv.ParseInt(us, 10, 64); !ok || err != nil || id == "" {
		return "", fmt.Errorf("run cursor %q is not one this keeper gave out", c)
	}
	return id, nil
}

// ResultQuery selects a page of a run's results by host: the hosts whose
// SID sorts after After, at most Limit of them (see PageLimit).
type ResultQuery struct {
	After string
	Limit int
}

// ResultPage is one page of a run's results (PageResults). Tasks counts
// every task with results over all the run's hosts; Hosts is how many
// hosts reported; Next is the After of the next page ("" on the last).
type ResultPage struct {
	Results []HostResult
	Tasks   []TaskCounts
	Hosts   int
	Next    string
}

// TaskCounts sums one task's results over all the hosts of a run.
type TaskCounts struct {
	Seq      int
	Path     string
	TaskName string
	Hosts    int
	Changed  int
	Statuses map[string]int
}
