package storetest

import (
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// testRunNotes: a run's notes (steps that targeted no host) are upserted
// by (run, seq), listed by seq, and refused for a run that does not exist.
func testRunNotes(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache", "h1")
	late := store.RunNote{RunID: run.ID, Seq: 3, Path: "1.0", TaskName: "filtered", Note: "where: was false on every host"}
	first := store.RunNote{RunID: run.ID, Seq: 1, Path: "0", TaskName: "db", Note: "on: [x] matched no member of this incarnation"}
	must(t, s.RecordRunNote(ctx, late))
	must(t, s.RecordRunNote(ctx, first))
	first.Note = "on: [db] matched no member of this incarnation"
	must(t, s.RecordRunNote(ctx, first)) // the last note for a task wins
	got, err := s.ListRunNotes(ctx, run.ID)
	must(t, err)
	diff(t, "run notes", got, []store.RunNote{first, late})

	got, err = s.ListRunNotes(ctx, "no-such-run")
	must(t, err)
	if len(got) != 0 {
		t.Errorf("notes of an unknown run: %+v", got)
	}
	wantCode(t, s.RecordRunNote(ctx, store.RunNote{RunID: "no-such-run", Seq: 0, Note: "x"}), domain.CodeNotFound)
}
