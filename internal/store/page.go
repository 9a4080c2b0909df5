package store

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
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
// creation time and apply_id (so it stays valid when r is deleted).
func RunCursor(r Run) string {
	return strconv.FormatInt(r.CreatedAt.UnixMicro(), 10) + "~" + r.ID
}

// ParseRunCursor splits a RunCursor.
func ParseRunCursor(c string) (time.Time, string, error) {
	us, id, ok := strings.Cut(c, "~")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", fmt.Errorf("run cursor %q is not one this keeper gave out", c)
	}
	return time.UnixMicro(n).UTC(), id, nil
}
