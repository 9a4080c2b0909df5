package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/store/sqlstore"
)

// tableBytes reads, from the SQLite file at path, the bytes each table and
// index takes on disk (the dbstat virtual table: pages × page size), the
// rows of run_results, and the database's used bytes (pages not on the
// free list).
func tableBytes(tb testing.TB, path string) (map[string]int64, int64, int64) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name, SUM(pgsize) FROM dbstat GROUP BY name`)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			tb.Fatal(err)
		}
		out[name] = n
	}
	rows.Close()
	var results, pages, free, size int64
	if err := db.QueryRow(`SELECT COUNT(*) FROM run_results`).Scan(&results); err != nil {
		tb.Fatal(err)
	}
	for q, v := range map[string]*int64{"PRAGMA page_count": &pages, "PRAGMA freelist_count": &free, "PRAGMA page_size": &size} {
		if err := db.QueryRow(q).Scan(v); err != nil {
			tb.Fatal(err)
		}
	}
	return out, results, (pages - free) * size
}

// BenchmarkResultBytes measures what one unchanged per-host result costs
// in the store (issue 23's target: ≤ 150 bytes): a swarm of N souls
// ($SOULSTACK_BENCH_SOULS, default 1000), the web service's 3-task
// create, then per op one no-op re-run of it (3 × N unchanged results
// written by the real engine through RecordResults). Reported from the
// keeper's SQLite file (dbstat): bytes of run_results per result row, and
// the whole database's growth per run and per result (runs, history
// snapshots and their indexes included).
func BenchmarkResultBytes(b *testing.B) {
	n := envInt(b, "SOULSTACK_BENCH_SOULS", 1000)
	ctx := context.Background()
	e := startKeeper(b, nil)
	e.registerService("web", webService)
	e.startSwarm(n, "web", "web")
	if _, err := e.createIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "site", Service: "web", Covens: []string{"web"},
		Essence: map[string]any{"site_dir": "/srv/site"}}); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(e.dir, "keeper", "keeper.db")
	before, rows0, used0 := tableBytes(b, path)
	runs := 0
	for b.Loop() {
		if _, err := e.runScenario(ctx, "site", "create", nil); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	if err := e.expectChanged(ctx, "site", 0); err != nil {
		b.Fatal(err)
	}
	after, rows1, used1 := tableBytes(b, path)
	added := rows1 - rows0
	if added != int64(runs*3*n) {
		b.Fatalf("%d result rows added by %d runs over %d hosts, want %d", added, runs, n, runs*3*n)
	}
	b.ReportMetric(float64(after["run_results"]-before["run_results"])/float64(added), "result-bytes/result")
	b.ReportMetric(float64(used1-used0)/float64(added), "db-bytes/result")
	b.ReportMetric(float64(used1-used0)/float64(runs), "db-bytes/run")
	var names []string
	for name := range after {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if d := after[name] - before[name]; d > 0 {
			b.Logf("%-32s +%8.1f KiB per run", name, float64(d)/float64(runs)/1024)
		}
	}
	b.Logf("%d runs × %d hosts × 3 tasks: run_results %d → %d bytes, database used %d → %d bytes", runs, n, before["run_results"], after["run_results"], used0, used1)
}

// growthHosts and growthTasks shape the generated runs: each over 10
// hosts with 3 tasks, so 100,000 runs hold 3,000,000 per-host results.
const (
	growthHosts = 10
	growthTasks = 3
	growthIncs  = 100
)

// BenchmarkGrowth fills the keeper's store with runs generated directly
// into SQLite (default 100,000: $SOULSTACK_BENCH_RUNS; 100 incarnations ×
// 1,000 runs, each run 10 hosts × 3 tasks with its history entry) and, at
// 1,000, 10,000 and every tenfold after, measures the Operator API and UI
// while the keeper serves: GET …/history (first page), GET /v1/runs (first
// page), GET /v1/runs/{id} of a 1,000-host run made at the start, and the
// dashboard (/ui/). Each is the median (and worst) of 20 requests. Then
// runs.keep with count 100 prunes the results of 90 % of the runs, timed.
// The database's size is reported at each step. Use -benchtime 1x.
func BenchmarkGrowth(b *testing.B) {
	total := envInt(b, "SOULSTACK_BENCH_RUNS", 100000)
	ctx := context.Background()
	e := startKeeper(b, func(k *config.Keeper) { k.Runs.Keep = config.RunsKeep{Interval: config.Duration(time.Hour)} })
	path := filepath.Join(e.dir, "keeper", "keeper.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	g := newGenerator(b, st, path)
	token := e.token
	for b.Loop() {
		done := 0
		for step := 1000; ; step *= 10 {
			step = min(step, total)
			t0 := time.Now()
			g.runs(done, step)
			b.Logf("generated runs %d..%d in %s", done, step, time.Since(t0).Round(time.Millisecond))
			done = step
			_, rows, used := tableBytes(b, path)
			b.Logf("%7d runs, %8d results: database %.1f MiB used", done, rows, float64(used)/(1<<20))
			b.ReportMetric(float64(used)/(1<<20), fmt.Sprintf("db-MiB@%d", done))
			for _, ep := range []struct{ name, path string }{
				{"history", "/v1/incarnations/inc-000/history"},
				{"runs", "/v1/runs"},
				{"run-show-1000-hosts", "/v1/runs/big-create"},
				{"dashboard", "/ui/"},
			} {
				med, worst := g.latency(e.addr, token, ep.path)
				b.Logf("  %-20s median %6.2f ms, worst %6.2f ms", ep.name, ms(med), ms(worst))
				b.ReportMetric(ms(med), fmt.Sprintf("%s-ms@%d", ep.name, done))
			}
			if done == total {
				break
			}
		}
		t0 := time.Now()
		rep, err := st.PruneResults(ctx, store.RunRetention{MaxCount: 100}, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		_, rows, used := tableBytes(b, path)
		b.Logf("runs.keep count 100: pruned %d runs, %d results in %s; %d results left, database %.1f MiB used",
			rep.Runs, rep.Results, time.Since(t0).Round(time.Millisecond), rows, float64(used)/(1<<20))
		b.ReportMetric(time.Since(t0).Seconds(), "prune-s")
	}
}

// generator writes runs straight into the keeper's SQLite file, in the
// store's own schema, many per transaction.
type generator struct {
	tb   testing.TB
	db   *sql.DB
	t0   time.Time
	num  int64 // the last runs.num used
	host map[string]int64
}

func ts(t time.Time) string { return t.UTC().Format(sqlstore.TextTimeLayout) }

func newGenerator(tb testing.TB, st store.Store, path string) *generator {
	tb.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	g := &generator{tb: tb, db: db, t0: time.Now().Add(-24 * time.Hour), host: map[string]int64{}}
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(st.CreateService(ctx, store.Service{Name: "web", Git: "file:///nowhere", Ref: "main", Commit: strings.Repeat("c", 40)}))
	// One incarnation over 1,000 hosts whose create run's results are
	// read back at every step (run show).
	big := make([]string, 1000)
	for i := range big {
		big[i] = fmt.Sprintf("big-%04d", i)
	}
	must(st.CreateIncarnation(ctx, store.Incarnation{Name: "big", Service: "web", Members: big},
		store.Run{ID: "big-create", Scenario: "create", Members: big, CreatedAt: g.t0}))
	var rs []store.HostResult
	for seq := range growthTasks {
		for _, sid := range big {
			rs = append(rs, unchangedResult("big-create", seq, sid, g.t0))
		}
	}
	must(st.RecordResults(ctx, rs))
	must(st.CommitRun(ctx, "big-create", map[string]any{"release": "1"}, store.Snapshot{Summary: map[string]any{"hosts": 1000}}, g.t0))
	for i := range growthIncs {
		name := fmt.Sprintf("inc-%03d", i)
		members := make([]string, growthHosts)
		for h := range members {
			members[h] = fmt.Sprintf("%s-host-%02d", name, h)
		}
		id := name + "-create"
		must(st.CreateIncarnation(ctx, store.Incarnation{Name: name, Service: "web", Members: members},
			store.Run{ID: id, Scenario: "create", Members: members, CreatedAt: g.t0}))
		rs = rs[:0]
		for seq := range growthTasks {
			for _, sid := range members {
				rs = append(rs, unchangedResult(id, seq, sid, g.t0))
			}
		}
		must(st.RecordResults(ctx, rs))
		must(st.CommitRun(ctx, id, map[string]any{"release": "1"}, store.Snapshot{Summary: map[string]any{"hosts": growthHosts}}, g.t0))
	}
	rows, err := db.Query(`SELECT id, sid FROM result_hosts`)
	must(err)
	for rows.Next() {
		var id int64
		var sid string
		must(rows.Scan(&id, &sid))
		g.host[sid] = id
	}
	rows.Close()
	must(db.QueryRow(`SELECT MAX(num) FROM runs`).Scan(&g.num))
	return g
}

// unchangedResult is a task result as the engine records an unchanged
// core.file task (no output, no data).
func unchangedResult(run string, seq int, sid string, at time.Time) store.HostResult {
	return store.HostResult{RunID: run, Seq: seq, Path: fmt.Sprint(seq + 1), TaskName: fmt.Sprintf("task %d", seq+1), SID: sid,
		Status: "ok", DurationMS: 2, StartedAt: at, FinishedAt: at.Add(2 * time.Millisecond), Final: true}
}

// runs writes runs from..to-1 (round robin over the incarnations), 1,000
// per transaction: the run, its history entry (counts) and its results.
func (g *generator) runs(from, to int) {
	g.tb.Helper()
	ctx := context.Background()
	for start := from; start < to; start += 1000 {
		tx, err := g.db.BeginTx(ctx, nil)
		if err != nil {
			g.tb.Fatal(err)
		}
		for i := start; i < min(start+1000, to); i++ {
			if err := g.run(ctx, tx, i); err != nil {
				_ = tx.Rollback()
				g.tb.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			g.tb.Fatal(err)
		}
	}
}

func (g *generator) run(ctx context.Context, tx *sql.Tx, i int) error {
	inc := fmt.Sprintf("inc-%03d", i%growthIncs)
	id := fmt.Sprintf("gen-%07d", i)
	at := g.t0.Add(time.Duration(i) * 500 * time.Millisecond)
	g.num++
	members := make([]string, growthHosts)
	for h := range members {
		members[h] = fmt.Sprintf(`"%s-host-%02d"`, inc, h)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, incarnation, scenario, input, check_mode, status, error, archon_id, keeper_id,
		resumed_from, service_commit, members, drift, upgrade_ref, created_at, started_at, finished_at, num)
		VALUES (?, ?, 'deploy', '{"release":"2"}', 0, 'succeeded', '', 'archon', 'keeper', '', ?, ?, 0, '', ?, ?, ?, ?)`,
		id, inc, strings.Repeat("c", 40), "["+strings.Join(members, ",")+"]", ts(at), ts(at), ts(at.Add(300*time.Millisecond)), g.num); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO history (incarnation, run_id, scenario, state, summary, created_at) VALUES (?, ?, 'deploy', ?, ?, ?)`,
		inc, id, `{"release":"2","replicas":3}`,
		fmt.Sprintf(`{"hosts":%d,"hosts_changed":0,"hosts_failed":0,"ok":%d,"changed":0,"failed":0,"skipped":0}`, growthHosts, growthHosts*growthTasks),
		ts(at.Add(300*time.Millisecond))); err != nil {
		return fmt.Errorf("history of %s: %w", id, err)
	}
	var sb strings.Builder
	args := make([]any, 0, growthHosts*growthTasks*8)
	for seq := range growthTasks {
		for h := range growthHosts {
			if sb.Len() > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, ?, ?, ?, 0, 'ok', 0, 0, '', '', '', '', 2, NULL, ?, 2000, 1)")
			sid := fmt.Sprintf("%s-host-%02d", inc, h)
			args = append(args, g.num, seq, g.host[sid], fmt.Sprint(seq+1), fmt.Sprintf("task %d", seq+1), at.UnixMicro())
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO run_results (run, seq, host, path, task_name, wave, status, changed, rc,
		stdout, stderr, msg, diff, duration_ms, data, started_us, elapsed_us, final) VALUES `+sb.String(), args...); err != nil {
		return fmt.Errorf("results of %s: %w", id, err)
	}
	return nil
}

// latency GETs path 20 times (the UI with the session cookie, the API
// with the bearer token) and returns the median and the worst time.
func (g *generator) latency(addr, token, path string) (time.Duration, time.Duration) {
	g.tb.Helper()
	var ds []time.Duration
	for range 20 {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			g.tb.Fatal(err)
		}
		if strings.HasPrefix(path, "/ui/") {
			req.AddCookie(&http.Cookie{Name: "soulstack_ui", Value: token})
		} else {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			g.tb.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ds = append(ds, time.Since(t0))
		if resp.StatusCode != http.StatusOK || n == 0 {
			g.tb.Fatalf("GET %s: %s (%d bytes)", path, resp.Status, n)
		}
	}
	return median(ds), slices.Max(ds)
}
