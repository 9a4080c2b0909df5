package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// getPage GETs path as a viewer and decodes the JSON array into out; it
// returns the status and the next-page headers.
func (e *env) getPage(path string, out any) (int, string, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.tokens[auth.RoleViewer])
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			e.t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode, resp.Header.Get("X-Next-Cursor"), resp.Header.Get("Link")
}

// TestSoulsPaged (issue 23): GET /v1/souls answers a bounded page (500 by
// default) and names the next one; the client follows the pages and gets
// every soul once, in SID order; ?limit= and ?after= pick a page.
func TestSoulsPaged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 1203
	for i := range n {
		if err := e.st.UpsertSoul(ctx, store.Soul{SID: fmt.Sprintf("host-%04d", i), Status: store.SoulConnected,
			Covens: []string{"web"}, LastSeen: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	var page []store.Soul
	status, next, link := e.getPage("/v1/souls", &page)
	if status != http.StatusOK || len(page) != 500 || next != "host-0499" || !strings.Contains(link, "after=host-0499") || !strings.Contains(link, `rel="next"`) {
		t.Fatalf("first page: status %d, %d souls, next %q, link %q", status, len(page), next, link)
	}
	status, next, _ = e.getPage("/v1/souls?coven=web&limit=3&after=host-1199", &page)
	if status != http.StatusOK || len(page) != 3 || page[0].SID != "host-1200" || next != "" {
		t.Fatalf("last page: status %d, %v, next %q", status, page, next)
	}
	all, err := e.client(auth.RoleViewer).ListSouls(ctx, apitypes.SoulQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n || all[0].SID != "host-0000" || all[n-1].SID != fmt.Sprintf("host-%04d", n-1) {
		t.Fatalf("the client read %d souls across the pages", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].SID <= all[i-1].SID {
			t.Fatalf("souls out of order at %d: %s after %s", i, all[i].SID, all[i-1].SID)
		}
	}
	if status, _, _ := e.getPage("/v1/souls?limit=0", &page); status != http.StatusBadRequest {
		t.Errorf("limit=0: status %d", status)
	}
	if status, _, _ := e.getPage("/v1/souls?limit=10001", &page); status != http.StatusBadRequest {
		t.Errorf("limit=10001: status %d", status)
	}
}

// TestRunsAndHistoryPaged: runs and history entries page newest first by
// cursor; a run list leaves out members (the run itself has them), a
// history entry links the run's per-host detail.
func TestRunsAndHistoryPaged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	must(e.st.CreateService(ctx, store.Service{Name: "svc", Git: "g", Ref: "main"}))
	must(e.st.CreateIncarnation(ctx, store.Incarnation{Name: "inc", Service: "svc", Members: []string{"a", "b"}},
		store.Run{ID: "run-0", Scenario: "create", Members: []string{"a", "b"}, CreatedAt: t0}))
	must(e.st.CommitRun(ctx, "run-0", map[string]any{}, store.Snapshot{}, t0.Add(time.Second)))
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("run-%d", i)
		at := t0.Add(time.Duration(i) * time.Minute)
		must(e.st.StartRun(ctx, store.Run{ID: id, Incarnation: "inc", Scenario: "deploy", Members: []string{"a", "b"}, CreatedAt: at}))
		must(e.st.CommitRun(ctx, id, map[string]any{"n": i}, store.Snapshot{Summary: map[string]any{"hosts": 2}}, at.Add(time.Second)))
	}
	var runs []store.Run
	var ids []string
	status, next, _ := e.getPage("/v1/runs?limit=2", &runs)
	if status != http.StatusOK || len(runs) != 2 || runs[0].ID != "run-4" || runs[1].ID != "run-3" || next == "" {
		t.Fatalf("first page of runs: %d %+v next %q", status, runs, next)
	}
	if runs[0].Members != nil {
		t.Errorf("the run list carries members: %v", runs[0].Members)
	}
	for next != "" {
		ids = append(ids, runs[0].ID, runs[1].ID)
		status, next, _ = e.getPage("/v1/runs?incarnation=inc&limit=2&after="+url.QueryEscape(next), &runs)
		if status != http.StatusOK {
			t.Fatalf("next page of runs: %d", status)
		}
	}
	if ids = append(ids, runs[0].ID); len(runs) != 1 || strings.Join(ids, " ") != "run-4 run-3 run-2 run-1 run-0" {
		t.Fatalf("runs across the pages: %v (last page %+v)", ids, runs)
	}
	if status, _, _ := e.getPage("/v1/runs?after=ghost", &runs); status != http.StatusBadRequest {
		t.Errorf("unknown cursor: status %d", status)
	}
	var hist []store.Snapshot
	status, next, _ = e.getPage("/v1/incarnations/inc/history?limit=3", &hist)
	if status != http.StatusOK || len(hist) != 3 || hist[0].RunID != "run-4" || next != fmt.Sprint(hist[2].ID) {
		t.Fatalf("first page of history: %d %+v next %q", status, hist, next)
	}
	if hist[0].Results != "/v1/runs/run-4" || hist[0].Summary["hosts"] != 2.0 {
		t.Errorf("history entry: results %q summary %v", hist[0].Results, hist[0].Summary)
	}
	status, next, _ = e.getPage("/v1/incarnations/inc/history?after="+next, &hist)
	if status != http.StatusOK || len(hist) != 2 || hist[1].RunID != "run-0" || next != "" {
		t.Fatalf("second page of history: %d %+v next %q", status, hist, next)
	}
	if status, _, _ := e.getPage("/v1/incarnations/inc/history?after=x", &hist); status != http.StatusBadRequest {
		t.Errorf("bad history cursor: status %d", status)
	}
}

// TestRunShowPaged (issue 36): GET /v1/runs/{apply_id} answers one page of
// hosts (100 by default) with every task, each with its counts over all
// hosts, and names the next page; ?limit= and ?after= pick a page, and the
// client's GetRun follows the pages to every result once.
func TestRunShowPaged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 250
	var sids []string
	for i := range n {
		sids = append(sids, fmt.Sprintf("host-%04d", i))
	}
	if err := e.st.CreateService(ctx, store.Service{Name: "big", Git: "/nowhere", Ref: "v1", Commit: "c0ffee", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	run := store.Run{ID: "big-create", Scenario: "create", KeeperID: "k1", CreatedAt: time.Now()}
	if err := e.st.CreateIncarnation(ctx, store.Incarnation{Name: "big", Service: "big", Ref: "v1", Commit: "c0ffee",
		Members: sids, CreatedAt: time.Now()}, run); err != nil {
		t.Fatal(err)
	}
	var rs []store.HostResult
	for i, sid := range sids {
		st := "ok"
		if i%10 == 0 {
			st = "changed"
		}
		rs = append(rs, store.HostResult{RunID: run.ID, Seq: 1, Path: "1", TaskName: "install", SID: sid, Status: st,
			Changed: st == "changed", StartedAt: time.Now(), FinishedAt: time.Now()})
		if i >= 200 { // the last 50 hosts alone ran task 2
			rs = append(rs, store.HostResult{RunID: run.ID, Seq: 2, Path: "2", TaskName: "late", SID: sid, Status: "ok",
				StartedAt: time.Now(), FinishedAt: time.Now()})
		}
	}
	if err := e.st.RecordResults(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if err := e.st.RecordRunNote(ctx, store.RunNote{RunID: run.ID, Seq: 3, Path: "3", TaskName: "db only", Note: "no host"}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.CommitRun(ctx, run.ID, map[string]any{}, store.Snapshot{}, time.Now()); err != nil {
		t.Fatal(err)
	}

	var d apitypes.RunDetail
	status, next, link := e.getPage("/v1/runs/big-create", &d)
	if status != http.StatusOK || next != "host-0099" || d.Next != "host-0099" || d.Hosts != n || !strings.Contains(link, "after=host-0099") {
		t.Fatalf("first page: status %d, next %q/%q, hosts %d, link %q", status, next, d.Next, d.Hosts, link)
	}
	type task struct {
		Name  string
		Hosts int
		Total int
	}
	tasks := func(d apitypes.RunDetail) []task {
		var out []task
		for _, tk := range d.Tasks {
			x := task{Name: tk.Name, Hosts: len(tk.Hosts)}
			if tk.Counts != nil {
				x.Total = tk.Counts.Hosts
			}
			out = append(out, x)
		}
		return out
	}
	if got, want := tasks(d), []task{{"install", 100, 250}, {"late", 0, 50}, {"db only", 0, 0}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first page tasks = %v, want %v", got, want)
	}
	if c := d.Tasks[0].Counts; c.Changed != 25 || c.Statuses["changed"] != 25 || c.Statuses["ok"] != 225 {
		t.Errorf("install counts = %+v", c)
	}
	d = apitypes.RunDetail{}
	status, next, _ = e.getPage("/v1/runs/big-create?limit=60&after=host-0199", &d)
	if status != http.StatusOK || next != "" || d.Next != "" {
		t.Fatalf("last page: status %d, next %q", status, next)
	}
	if got, want := tasks(d), []task{{"install", 50, 250}, {"late", 50, 50}, {"db only", 0, 0}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("last page tasks = %v, want %v", got, want)
	}
	if status, _, _ := e.getPage("/v1/runs/big-create?limit=0", &d); status != http.StatusBadRequest {
		t.Errorf("limit=0: status %d, want 400", status)
	}

	full, err := e.client(auth.RoleViewer).GetRun(ctx, "big-create")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range full.Tasks[0].Hosts {
		seen[h.SID] = true
	}
	if len(full.Tasks[0].Hosts) != n || len(seen) != n || len(full.Tasks[1].Hosts) != 50 || full.Next != "" {
		t.Errorf("GetRun merged %d install results (%d hosts), %d late, next %q", len(full.Tasks[0].Hosts), len(seen), len(full.Tasks[1].Hosts), full.Next)
	}
}
