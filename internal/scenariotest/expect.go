package scenariotest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// Check compares what the run did with the test's expectations and returns
// one line per expectation that did not hold.
func (h *Harness) Check(ctx context.Context, run store.Run, results []store.HostResult) ([]string, error) {
	e := h.Test.Expect
	var fails []string
	failf := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }

	if e.Outcome != "" && run.Status != e.Outcome {
		failf("outcome: want %s, got %s (error: %s)", e.Outcome, run.Status, orNone(run.Error))
	}
	if e.Error != "" && !strings.Contains(run.Error, e.Error) {
		failf("error: want it to contain %q, got %q", e.Error, run.Error)
	}
	inc, err := h.Store.GetIncarnation(ctx, h.Test.Incarnation.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the incarnation: %w", err)
	}
	if e.Status != "" && inc.Status != e.Status {
		failf("status: want %s, got %s", e.Status, inc.Status)
	}
	if e.HasState {
		want, got := normalize(orEmpty(e.State)), normalize(inc.State)
		if d := cmp.Diff(want, got); d != "" {
			failf("state (-want +got):\n%s", indent(d))
		}
	}
	if e.Members != nil && !sameSet(e.Members, inc.Members) {
		failf("members: want %v, got %v", sorted(e.Members), inc.Members)
	}
	sc := h.Service.Scenarios[h.Test.Scenario]
	for _, te := range e.Tasks {
		t := findTask(sc, te.Task)
		rows := rowsOf(results, t.Path)
		name := fmt.Sprintf("task %q", te.Task)
		check := func(what string, want *[]string, keep func(store.HostResult) bool) {
			if want == nil {
				return
			}
			got := sidsWhere(rows, keep)
			if !sameSet(*want, got) {
				failf("%s: %s: want %v, got %v", name, what, sorted(*want), got)
			}
		}
		check("ran", te.Ran, func(r store.HostResult) bool {
			return r.Status == string(domain.StatusOK) || r.Status == string(domain.StatusChanged) || r.Status == string(domain.StatusFailed)
		})
		check("skipped", te.Skipped, statusIs(domain.StatusSkipped))
		check("changed", te.Changed, func(r store.HostResult) bool { return r.Changed })
		check("failed", te.Failed, statusIs(domain.StatusFailed))
		check("unreachable", te.Unreachable, statusIs(domain.StatusUnreachable))
		check("unknown", te.Unknown, statusIs(domain.StatusUnknown))
		if te.Waves != nil {
			want := make([][]string, len(*te.Waves))
			for i, w := range *te.Waves {
				want[i] = sorted(w)
			}
			if got := waves(rows); !cmp.Equal(want, got) {
				failf("%s: waves: want %v, got %v", name, want, got)
			}
		}
	}
	for _, ref := range e.NotRun {
		t := findTask(sc, ref)
		if rows := rowsOf(results, t.Path); len(rows) > 0 {
			failf("task %q: want it not run, but it has results on %v", ref, sidsWhere(rows, func(store.HostResult) bool { return true }))
		}
	}
	if e.Triggers != nil {
		trs, err := h.Store.ListTriggers(ctx, inc.Name, h.Test.Scenario)
		if err != nil {
			return nil, fmt.Errorf("reading pending triggers: %w", err)
		}
		var want, got []string
		for _, tr := range *e.Triggers {
			want = append(want, triggerKey(sc, tr.Task)+" @ "+tr.SID)
		}
		for _, tr := range trs {
			got = append(got, tr.Task+" @ "+tr.SID)
		}
		if !sameSet(want, got) {
			failf("pending triggers: want %v, got %v", sorted(want), sorted(got))
		}
	}
	return fails, nil
}

func statusIs(s domain.HostStatus) func(store.HostResult) bool {
	return func(r store.HostResult) bool { return r.Status == string(s) }
}

func rowsOf(results []store.HostResult, path string) []store.HostResult {
	var out []store.HostResult
	for _, r := range results {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func sidsWhere(rows []store.HostResult, keep func(store.HostResult) bool) []string {
	out := []string{}
	for _, r := range rows {
		if keep(r) {
			out = append(out, r.SID)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// waves groups a task's hosts by wave number, in wave order.
func waves(rows []store.HostResult) [][]string {
	by := map[int][]string{}
	for _, r := range rows {
		by[r.Wave] = append(by[r.Wave], r.SID)
	}
	nums := make([]int, 0, len(by))
	for n := range by {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	out := make([][]string, 0, len(nums))
	for _, n := range nums {
		out = append(out, sorted(by[n]))
	}
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	if out == nil {
		out = []string{}
	}
	sort.Strings(out)
	return out
}

func sameSet(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }

// normalize makes YAML and JSON values comparable (numbers as float64).
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
