package storetest

import (
	"testing"

	"github.com/soulstack/soulstack/internal/store"
)

// testLateResults: a late result lands where the run has no row or only
// the keeper's verdict (not final), once; it never replaces a final row
// (audit finding L5).
func testLateResults(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache", "h1", "h2")
	final := hostResult(run.ID, 1, "h1", "ok")
	final.Final = true
	verdict := hostResult(run.ID, 1, "h2", "failed")
	verdict.Msg = "timed out"
	must(t, s.RecordResults(ctx, []store.HostResult{final, verdict}))
	must(t, s.FinishRun(ctx, run.ID, store.RunFailed, "x", base))

	rewrite := hostResult(run.ID, 1, "h1", "failed")
	answer := hostResult(run.ID, 1, "h2", "changed")
	fresh := hostResult(run.ID, 2, "h2", "ok")
	n, err := s.RecordLateResults(ctx, []store.HostResult{rewrite, answer, fresh})
	must(t, err)
	if n != 2 {
		t.Errorf("RecordLateResults wrote %d rows, want 2 (the verdict's and the new one)", n)
	}
	answer.Final, fresh.Final = true, true
	got, err := s.ListResults(ctx, run.ID)
	must(t, err)
	diff(t, "after late results", got, []store.HostResult{final, answer, fresh})

	// Once: the late answer is final now.
	again := hostResult(run.ID, 1, "h2", "failed")
	n, err = s.RecordLateResults(ctx, []store.HostResult{again})
	must(t, err)
	if n != 0 {
		t.Errorf("a second late result wrote %d rows", n)
	}
	got, err = s.ListResults(ctx, run.ID)
	must(t, err)
	diff(t, "after a second late result", got, []store.HostResult{final, answer, fresh})
}
