package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/internal/store"
)

// A result's msg and data are stored once per distinct value in
// result_texts (migration 0213): an unchanged task reports the same ones
// run after run, and they were most of a result's bytes.

// resultText is the stored form of a result's msg and data: the JSON
// array [msg, data]; "" when both are empty (nothing is stored).
func resultText(r store.HostResult) (string, error) {
	if r.Msg == "" && r.Data == nil {
		return "", nil
	}
	b, err := json.Marshal([]any{r.Msg, r.Data})
	if err != nil {
		return "", invalid("encoding result data: %v", err)
	}
	return string(b), nil
}

// parseResultText fills r's Msg and Data from a stored text.
func parseResultText(body string, r *store.HostResult) error {
	var v []json.RawMessage
	if err := json.Unmarshal([]byte(body), &v); err != nil || len(v) != 2 {
		return fmt.Errorf("decoding a stored result text: %v", err)
	}
	if err := json.Unmarshal(v[0], &r.Msg); err != nil {
		return fmt.Errorf("decoding a stored result msg: %w", err)
	}
	r.Data = nil
	if err := json.Unmarshal(v[1], &r.Data); err != nil {
		return fmt.Errorf("decoding stored result data: %w", err)
	}
	return nil
}

// internTexts returns the result_texts number of each body, inserting the
// new ones, inside tx. The upsert touches an existing row, which locks it
// until tx ends: a concurrent prune cannot delete a text this transaction
// is about to refer to (and the foreign key refuses it after).
func internTexts(ctx context.Context, tx q, bodies []string) (map[string]int64, error) {
	out := make(map[string]int64, len(bodies))
	byHash := map[string]string{}
	var todo []string
	for _, b := range bodies {
		if _, ok := out[b]; ok || b == "" {
			continue
		}
		out[b] = 0
		todo = append(todo, b)
	}
	for len(todo) > 0 {
		chunk := todo[:min(len(todo), 400)]
		todo = todo[len(chunk):]
		args := make([]any, 0, 2*len(chunk))
		for _, b := range chunk {
			h := sha256.Sum256([]byte(b))
			byHash[string(h[:])] = b
			args = append(args, h[:], b)
		}
		rows, err := tx.query(ctx, `INSERT INTO result_texts (hash, body) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?), ", len(chunk)), ", ")+`
			ON CONFLICT (hash) DO UPDATE SET hash = excluded.hash RETURNING id, hash`, args...)
		if err != nil {
			return nil, fmt.Errorf("storing result texts: %w", err)
		}
		for rows.Next() {
			var id int64
			var h []byte
			if err := rows.Scan(&id, &h); err != nil {
				rows.Close()
				return nil, err
			}
			out[byHash[string(h)]] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pruneTexts deletes the result texts no result refers to any more, in
// batches; a text a concurrent write took meanwhile stays (the foreign
// key refuses its delete, which is then skipped).
func (s *Store) pruneTexts(ctx context.Context) (int, error) {
	deleted := 0
	for {
		rows, err := s.reader().query(ctx, `SELECT id FROM result_texts t
			WHERE NOT EXISTS (SELECT 1 FROM run_results r WHERE r.detail = t.id) LIMIT 500`)
		if err != nil {
			return deleted, s.wrap("finding unused result texts", err)
		}
		ids, err := collect(rows, func(sc interface{ Scan(...any) error }) (any, error) {
			var id int64
			err := sc.Scan(&id)
			return id, err
		})
		if err != nil {
			return deleted, s.wrap("finding unused result texts", err)
		}
		if len(ids) == 0 {
			return deleted, nil
		}
		n, err := s.write(ctx, `DELETE FROM result_texts WHERE id IN (`+placeholders(len(ids))+`)
			AND NOT EXISTS (SELECT 1 FROM run_results r WHERE r.detail = result_texts.id)`, ids...)
		if err != nil {
			if s.d.Classify(err) == ClassForeignKey {
				continue // taken again meanwhile: the next pass sees it referenced
			}
			return deleted, s.wrap("deleting unused result texts", err)
		}
		deleted += int(n)
		if len(ids) < 500 {
			return deleted, nil
		}
	}
}
