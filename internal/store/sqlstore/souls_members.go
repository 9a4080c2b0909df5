package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/soulstack/soulstack/internal/store"
)

// soulChunk is how many SIDs one GetSouls query binds: well under SQLite's
// variable limit (32766; 999 before 3.32) and PostgreSQL's 65535
// parameters.
const soulChunk = 500

// GetSouls returns the registered souls among sids, sorted by SID, reading
// them in chunks of soulChunk SIDs.
func (s *Store) GetSouls(ctx context.Context, sids []string) ([]store.Soul, error) {
	return getSouls(ctx, s, sids, soulCols, scanSoul)
}

// GetSoulsBrief is GetSouls without the soulprint: only SID, Status and
// Covens are read (the columns before the soulprint in the row, so a
// large soulprint is neither copied nor decoded).
func (s *Store) GetSoulsBrief(ctx context.Context, sids []string) ([]store.Soul, error) {
	return getSouls(ctx, s, sids, briefSoulCols, scanBriefSoul)
}

// briefSoulCols are the columns of a brief soul: those before the
// soulprint in the row.
const briefSoulCols = `sid, status, covens`

func scanBriefSoul(sc interface{ Scan(...any) error }) (store.Soul, error) {
	var so store.Soul
	err := sc.Scan(&so.SID, &so.Status, listCol{&so.Covens})
	return so, err
}

func getSouls(ctx context.Context, s *Store, sids []string, cols string, scan func(interface{ Scan(...any) error }) (store.Soul, error)) ([]store.Soul, error) {
	sids = slices.Compact(slices.Sorted(slices.Values(sids)))
	out := make([]store.Soul, 0, len(sids))
	// Sorted chunks of a sorted list, each read ORDER BY sid: the
	// concatenation is sorted.
	for chunk := range slices.Chunk(sids, soulChunk) {
		args := make([]any, len(chunk))
		for i, sid := range chunk {
			args[i] = sid
		}
		rows, err := s.reader().query(ctx, `SELECT `+cols+` FROM souls WHERE sid IN (`+placeholders(len(chunk))+`) ORDER BY sid`, args...)
		if err != nil {
			return nil, s.wrap("reading souls", err)
		}
		part, err := collect(rows, scan)
		if err != nil {
			return nil, s.wrap("reading souls", err)
		}
		out = append(out, part...)
	}
	return out, nil
}

// CountSouls counts the registered souls by status.
func (s *Store) CountSouls(ctx context.Context) (map[string]int, error) {
	rows, err := s.reader().query(ctx, `SELECT status, COUNT(*) FROM souls GROUP BY status`)
	if err != nil {
		return nil, s.wrap("counting souls", err)
	}
	type count struct {
		status string
		n      int
	}
	counts, err := collect(rows, func(sc interface{ Scan(...any) error }) (count, error) {
		var c count
		err := sc.Scan(&c.status, &c.n)
		return c, err
	})
	if err != nil {
		return nil, s.wrap("counting souls", err)
	}
	out := make(map[string]int, len(counts))
	for _, c := range counts {
		out[c.status] = c.n
	}
	return out, nil
}

// CountSoulsByKeeper counts the connected souls by the keeper holding
// their stream.
func (s *Store) CountSoulsByKeeper(ctx context.Context) (map[string]int, error) {
	rows, err := s.reader().query(ctx, `SELECT keeper_id, COUNT(*) FROM souls WHERE status = ? AND keeper_id <> '' GROUP BY keeper_id`,
		store.SoulConnected)
	if err != nil {
		return nil, s.wrap("counting souls by keeper", err)
	}
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return nil, s.wrap("counting souls by keeper", err)
		}
		out[k] = n
	}
	return out, s.wrap("counting souls by keeper", errors.Join(rows.Err(), rows.Close()))
}

// SoulHolders returns the keeper holding each connected soul among sids,
// in one query whatever their number (a JSON array in one argument).
func (s *Store) SoulHolders(ctx context.Context, sids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(sids) == 0 {
		return out, nil
	}
	set, err := json.Marshal(sids)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader().query(ctx, `SELECT sid, keeper_id FROM souls
		WHERE status = ? AND keeper_id <> '' AND sid IN (`+s.d.TextSet+`)`, store.SoulConnected, string(set))
	if err != nil {
		return nil, s.wrap("reading the keepers holding souls", err)
	}
	for rows.Next() {
		var sid, k string
		if err := rows.Scan(&sid, &k); err != nil {
			rows.Close()
			return nil, s.wrap("reading the keepers holding souls", err)
		}
		out[sid] = k
	}
	return out, s.wrap("reading the keepers holding souls", errors.Join(rows.Err(), rows.Close()))
}
