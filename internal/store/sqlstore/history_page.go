package sqlstore

import (
	"context"

	"github.com/soulstack/soulstack/internal/store"
)

// ListHistoryPage returns at most limit snapshots of incarnation with an
// ID below before (0 = from the newest), newest first (issue 23: the
// history route reads one bounded page through history_incarnation).
func (s *Store) ListHistoryPage(ctx context.Context, incarnation string, before int64, limit int) ([]store.Snapshot, error) {
	if limit <= 0 {
		return nil, s.wrap("listing history", invalid("a page needs a positive limit, not %d", limit))
	}
	return s.listHistory(ctx, incarnation, before, limit)
}
