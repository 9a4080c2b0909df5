package relay_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// countRelayRows makes the database count every row written to the relay
// tables, and their payload bytes, from now on; the returned function
// reads the counts.
func countRelayRows(t *testing.T, dbURL string) func() (batches, results, bytes int) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `
		CREATE TABLE relay_written (tbl TEXT NOT NULL, bytes INT NOT NULL);
		CREATE FUNCTION relay_written() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF TG_TABLE_NAME = 'relay_batches' THEN
				INSERT INTO relay_written VALUES (TG_TABLE_NAME, octet_length(NEW.work));
			ELSE
				INSERT INTO relay_written VALUES (TG_TABLE_NAME, octet_length(NEW.body));
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER relay_batches_written AFTER INSERT ON relay_batches FOR EACH ROW EXECUTE FUNCTION relay_written();
		CREATE TRIGGER relay_results_written AFTER INSERT ON relay_results FOR EACH ROW EXECUTE FUNCTION relay_written();`); err != nil {
		t.Fatal(err)
	}
	return func() (batches, results, bytes int) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE tbl = 'relay_batches'), count(*) FILTER (WHERE tbl = 'relay_results'), coalesce(sum(bytes), 0)
			FROM relay_written`).Scan(&batches, &results, &bytes); err != nil {
			t.Fatal(err)
		}
		return batches, results, bytes
	}
}

// TestRelayBatches: a fan-out from k1 over 2,000 souls, 1,500 of them held
// by k2 and 400 by k3, writes one work row per other keeper — not one per
// soul — and results in a few rows, which come back while other souls are
// still working (live progress); the target's gateway gets the batch in
// one call with each soul's own TaskID and work.
func TestRelayBatches(t *testing.T) {
	dbURL := pgtest.FreshDatabase(t)
	var local, at2, at3 []string
	for i := range 100 {
		local = append(local, fmt.Sprintf("l%04d", i))
	}
	for i := range 1500 {
		at2 = append(at2, fmt.Sprintf("b%04d", i))
	}
	for i := range 400 {
		at3 = append(at3, fmt.Sprintf("c%04d", i))
	}
	k1 := startKeeper(t, dbURL, "k1", local...)
	k2 := startKeeper(t, dbURL, "k2", at2...)
	startKeeper(t, dbURL, "k3", at3...)
	written := countRelayRows(t, dbURL)
	// The last 500 of k2's souls answer only when the gate opens.
	k2.gw.mu.Lock()
	for _, sid := range at2[1000:] {
		k2.gw.gated[sid] = true
	}
	k2.gw.mu.Unlock()

	var reqs []dispatch.Request
	for _, sids := range [][]string{local, at2, at3} {
		for _, sid := range sids {
			w := work(sid, time.Minute)
			if sid == "b0007" {
				w.Call = &dispatch.Call{Module: "core.test.echo", Params: map[string]any{"message": "only b0007"}}
			}
			reqs = append(reqs, dispatch.Request{SID: sid, Work: w})
		}
	}
	var mu sync.Mutex
	progress := map[string]domain.Result{}
	done := make(chan map[string]domain.Result, 1)
	go func() {
		done <- k1.r.Dispatch(t.Context(), reqs, func(sid string, r domain.Result) {
			mu.Lock()
			progress[sid] = r
			mu.Unlock()
		})
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(progress)
	}
	// Live progress: k2's first 1,000 souls and all of k3's are reported
	// while 500 of k2's souls are still working.
	waitFor(t, 10*time.Second, func() bool { return count() == 1500 }, "the answered souls' results to come back")
	time.Sleep(300 * time.Millisecond) // several flush intervals: nothing else arrives
	if n := count(); n != 1500 {
		t.Fatalf("%d results before the gated souls answered, want 1500", n)
	}
	close(k2.gw.gate)
	var got map[string]domain.Result
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the batched dispatch did not return")
	}
	if len(got) != 2000 || len(progress) != 2000 {
		t.Fatalf("%d results, %d progress reports, want 2000", len(got), len(progress))
	}
	for _, sids := range [][]string{local, at2, at3} {
		for _, sid := range sids {
			if !got[sid].Changed || got[sid].Stdout != "ran on "+sid+" via "+map[byte]string{'l': "k1", 'b': "k2", 'c': "k3"}[sid[0]] {
				t.Fatalf("result of %s: %+v", sid, got[sid])
			}
		}
	}

	// One work row per other keeper; results in a few rows each (k2's
	// answered in two waves, at least two rows), never one per soul.
	batches, results, bytes := written()
	t.Logf("fan-out over 2,000 souls (1,900 relayed): %d work rows, %d results rows, %d bytes", batches, results, bytes)
	if batches != 2 || results < 3 || results > 20 {
		t.Fatalf("relay rows written: %d work, %d results; want 2 work rows and a few results rows", batches, results)
	}
	if bytes > 1900*200 {
		t.Errorf("relay rows carry %d bytes for 1,900 souls", bytes)
	}
	if st := k1.r.Stats(); st.Batches != 2 || st.ResultRows != 0 {
		t.Errorf("k1's relay stats: %+v", st)
	}
	if st := k2.r.Stats(); st.Batches != 0 || st.ResultRows < 2 {
		t.Errorf("k2's relay stats: %+v", st)
	}

	// k2's gateway got the batch in one call, each soul with its own
	// TaskID, and b0007 its own work.
	k2.gw.mu.Lock()
	calls := k2.gw.calls
	k2.gw.mu.Unlock()
	if calls != 1 {
		t.Errorf("k2's gateway was called %d times for one batch", calls)
	}
	for _, req := range k2.gw.requests() {
		want := "only b0007"
		if req.SID != "b0007" {
			want = "hi"
		}
		if req.Work.TaskID != "run-1/1/"+req.SID+"/1" || req.Work.Call.Params["message"] != want {
			t.Fatalf("work for %s arrived as %+v", req.SID, req.Work)
		}
	}
	if rows, _ := k1.st.ListRelayBatches(t.Context(), store.RelayFilter{}); len(rows) != 0 {
		t.Errorf("batches left behind: %+v", rows)
	}
}
