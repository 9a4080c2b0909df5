package sqlstore

import (
	"context"

	"github.com/soulstack/soulstack/internal/store"
)

// RecordRunNote upserts the note of one task of a run, keyed by (run,
// seq). ErrNotFound when the run does not exist.
func (s *Store) RecordRunNote(ctx context.Context, n store.RunNote) error {
	return s.inTx(ctx, "recording a run note", func(tx q) error {
		if err := mustExist(ctx, tx, "run", "runs", "id", n.RunID); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO run_notes (run_id, seq, path, task_name, note) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (run_id, seq) DO UPDATE SET path = excluded.path, task_name = excluded.task_name, note = excluded.note`,
			n.RunID, n.Seq, n.Path, n.TaskName, n.Note)
		return err
	})
}

// ListRunNotes returns a run's task notes by seq.
func (s *Store) ListRunNotes(ctx context.Context, runID string) ([]store.RunNote, error) {
	rows, err := s.reader().query(ctx, `SELECT run_id, seq, path, task_name, note FROM run_notes WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, s.wrap("listing run notes", err)
	}
	out, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.RunNote, error) {
		var n store.RunNote
		err := sc.Scan(&n.RunID, &n.Seq, &n.Path, &n.TaskName, &n.Note)
		return n, err
	})
	return out, s.wrap("listing run notes", err)
}
