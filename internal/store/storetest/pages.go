package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var pageTests = []test{
	{"PageSouls", testPageSouls},
	{"PageRuns", testPageRuns},
	{"PageResults", testPageResults},
}

// testPageResults: a run's results come a page of hosts at a time (every
// task's result of those hosts, by seq and sid), each page with the
// counts of every task over all hosts; the pages cover every result once.
func testPageResults(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache", "h1", "h2", "h3", "h4", "h5")
	var all []store.HostResult
	for _, sid := range []string{"h5", "h3", "h1", "h2", "h4"} {
		st := "ok"
		if sid == "h2" {
			st = "changed"
		}
		all = append(all, hostResult(run.ID, 1, sid, st))
		if sid != "h4" { // h4 was unreachable after task 1: no task 2
			all = append(all, hostResult(run.ID, 2, sid, "ok"))
		}
	}
	must(t, s.RecordResults(ctx, all))
	want, err := s.ListResults(ctx, run.ID)
	must(t, err)
	wantTasks := []store.TaskCounts{
		{Seq: 1, Path: "1", TaskName: "task 1", Hosts: 5, Changed: 1, Statuses: map[string]int{"ok": 4, "changed": 1}},
		{Seq: 2, Path: "2", TaskName: "task 2", Hosts: 4, Statuses: map[string]int{"ok": 4}},
	}
	var got []store.HostResult
	var pages [][]string
	q := store.ResultQuery{Limit: 2}
	for range 10 {
		p, err := s.PageResults(ctx, run.ID, q)
		must(t, err)
		diff(t, "task counts", p.Tasks, wantTasks)
		if p.Hosts != 5 {
			t.Errorf("page says %d hosts, want 5", p.Hosts)
		}
		hosts := map[string]bool{}
		var sids []string
		for _, r := range p.Results {
			if !hosts[r.SID] {
				sids = append(sids, r.SID)
			}
			hosts[r.SID] = true
		}
		pages = append(pages, sids)
		got = append(got, p.Results...)
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	diff(t, "pages of hosts", pages, [][]string{{"h1", "h2"}, {"h3", "h4"}, {"h5"}})
	if len(got) != len(want) {
		t.Errorf("pages hold %d results, ListResults %d", len(got), len(want))
	}
	p, err := s.PageResults(ctx, "nope", store.ResultQuery{})
	must(t, err)
	if len(p.Results) != 0 || p.Hosts != 0 || p.Next != "" {
		t.Errorf("page of an unknown run = %+v", p)
	}
}

// pageSIDs walks every page of q and returns the SIDs of each page.
func pageSIDs(t *testing.T, s store.Store, q store.SoulQuery) [][]string {
	t.Helper()
	var pages [][]string
	for range 100 {
		p, err := s.PageSouls(t.Context(), q)
		must(t, err)
		sids := []string{}
		for _, so := range p.Souls {
			sids = append(sids, so.SID)
		}
		pages = append(pages, sids)
		if p.Next == "" {
			return pages
		}
		q.After = p.Next
	}
	t.Fatal("paging did not end after 100 pages")
	return nil
}

func testPageSouls(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := range 7 {
		so := soul(fmt.Sprintf("web-%d", i), "web")
		if i%2 == 1 {
			so.Covens = append(so.Covens, "dc2")
			so.Soulprint["os"] = map[string]any{"family": "redhat"}
			so.Soulprint["virtual"] = true
		}
		must(t, s.UpsertSoul(ctx, so))
	}
	db := soul("db-1", "db")
	db.Soulprint["virtual"] = false
	must(t, s.UpsertSoul(ctx, db))
	must(t, s.UpsertSoul(ctx, soul("web")))
	must(t, s.SetSoulStatus(ctx, "web-4", store.SoulPending, "", base))

	diff(t, "pages of 3", pageSIDs(t, s, store.SoulQuery{Limit: 3}),
		[][]string{{"db-1", "web", "web-0"}, {"web-1", "web-2", "web-3"}, {"web-4", "web-5", "web-6"}})
	diff(t, "one page", pageSIDs(t, s, store.SoulQuery{}),
		[][]string{{"db-1", "web", "web-0", "web-1", "web-2", "web-3", "web-4", "web-5", "web-6"}})
	diff(t, "prefix web-", pageSIDs(t, s, store.SoulQuery{SIDPrefix: "web-", Limit: 4}),
		[][]string{{"web-0", "web-1", "web-2", "web-3"}, {"web-4", "web-5", "web-6"}})
	diff(t, "prefix without match", pageSIDs(t, s, store.SoulQuery{SIDPrefix: "x"}), [][]string{{}})
	diff(t, "pending", pageSIDs(t, s, store.SoulQuery{Status: store.SoulPending}), [][]string{{"web-4"}})
	diff(t, "coven dc2", pageSIDs(t, s, store.SoulQuery{Covens: []string{"dc2", "web"}, Limit: 2}),
		[][]string{{"web-1", "web-3"}, {"web-5"}})
	diff(t, "fact os.family", pageSIDs(t, s, store.SoulQuery{Fact: "os.family", FactValue: "redhat"}),
		[][]string{{"web-1", "web-3", "web-5"}})
	diff(t, "fact and status and prefix", pageSIDs(t, s, store.SoulQuery{Fact: "os.family", FactValue: "debian",
		Status: store.SoulConnected, SIDPrefix: "web-"}), [][]string{{"web-0", "web-2", "web-6"}})
	diff(t, "numeric fact", pageSIDs(t, s, store.SoulQuery{Fact: "cpus", FactValue: "4", SIDPrefix: "d"}), [][]string{{"db-1"}})
	diff(t, "boolean fact", pageSIDs(t, s, store.SoulQuery{Fact: "virtual", FactValue: "true"}),
		[][]string{{"web-1", "web-3", "web-5"}})
	diff(t, "boolean false", pageSIDs(t, s, store.SoulQuery{Fact: "virtual", FactValue: "false"}), [][]string{{"db-1"}})
	diff(t, "fact present", pageSIDs(t, s, store.SoulQuery{Fact: "virtual"}),
		[][]string{{"db-1", "web-1", "web-3", "web-5"}})
	p, err := s.PageSouls(ctx, store.SoulQuery{Fact: "os.family", FactValue: "redhat", Limit: 1, Count: true})
	must(t, err)
	diff(t, "count of matching souls", p.Total, 3)
	diff(t, "count, first page", len(p.Souls), 1)
	p, err = s.PageSouls(ctx, store.SoulQuery{SIDPrefix: "web", After: "web-3", Count: true})
	must(t, err)
	diff(t, "count ignores the cursor", p.Total, 8)
	covens, err := s.ListCovens(ctx)
	must(t, err)
	diff(t, "covens", covens, []string{"db", "dc2", "web"})
	_, err = s.PageSouls(ctx, store.SoulQuery{Fact: "os.family'; DROP TABLE souls; --", FactValue: "x"})
	wantCode(t, err, domain.CodeInvalid)

	// Without a limit a page is DefaultPageLimit long (PageLimit, which
	// also caps it at MaxPageLimit, has its own test).
	var bulk []store.Soul
	for i := range store.DefaultPageLimit + 2 {
		bulk = append(bulk, soul(fmt.Sprintf("z-%04d", i), "bulk"))
	}
	must(t, s.UpsertSouls(ctx, bulk))
	bulk[0].Covens = []string{"moved"}
	must(t, s.UpsertSouls(ctx, bulk[:1])) // replaces, coven index too
	p, err = s.PageSouls(ctx, store.SoulQuery{Covens: []string{"bulk"}, Count: true, Limit: 1})
	must(t, err)
	diff(t, "bulk souls in coven bulk", p.Total, store.DefaultPageLimit+1)
	p, err = s.PageSouls(ctx, store.SoulQuery{SIDPrefix: "z-"})
	must(t, err)
	diff(t, "default page", len(p.Souls), store.DefaultPageLimit)
	diff(t, "next of the default page", p.Next, fmt.Sprintf("z-%04d", store.DefaultPageLimit-1))
}

func testPageRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	newIncarnation(t, s, "redis", "a")
	newIncarnation(t, s, "redis", "b")
	must(t, s.FinishRun(ctx, incarnation(t, s, "b").ActiveRun, store.RunFailed, "boom", base))
	for i := range 5 {
		must(t, s.FinishRun(ctx, incarnation(t, s, "a").ActiveRun, store.RunSucceeded, "", base))
		// a-1 and a-2 share their creation time: the apply_id orders them.
		c := at(time.Duration(i+1) * time.Minute)
		if i == 2 {
			c = at(2 * time.Minute)
		}
		must(t, s.StartRun(ctx, store.Run{ID: fmt.Sprintf("a-%d", i), Incarnation: "a", Scenario: "noop", CreatedAt: c}))
	}
	walk := func(q store.RunQuery) [][]string {
		t.Helper()
		var pages [][]string
		for range 100 {
			p, err := s.PageRuns(ctx, q)
			must(t, err)
			ids := []string{}
			for _, r := range p.Runs {
				ids = append(ids, r.ID)
			}
			pages = append(pages, ids)
			if p.Next == "" {
				return pages
			}
			q.Before = p.Next
		}
		t.Fatal("paging did not end after 100 pages")
		return nil
	}
	diff(t, "runs of a by 2", walk(store.RunQuery{Incarnation: "a", Limit: 2}),
		[][]string{{"a-4", "a-3"}, {"a-2", "a-1"}, {"a-0", "a-create"}})
	diff(t, "runs of a by 3 (a tie across pages)", walk(store.RunQuery{Incarnation: "a", Limit: 3}),
		[][]string{{"a-4", "a-3", "a-2"}, {"a-1", "a-0", "a-create"}})
	diff(t, "all runs by 4", walk(store.RunQuery{Limit: 4}),
		[][]string{{"a-4", "a-3", "a-2", "a-1"}, {"a-0", "b-create", "a-create"}})
	diff(t, "failed", walk(store.RunQuery{Status: store.RunFailed}), [][]string{{"b-create"}})
	diff(t, "scenario noop, running", walk(store.RunQuery{Scenario: "noop", Status: store.RunPending}), [][]string{{"a-4"}})
	_, err := s.PageRuns(ctx, store.RunQuery{Before: "not-a-cursor"})
	wantCode(t, err, domain.CodeInvalid)

	counts, err := s.CountRuns(ctx)
	must(t, err)
	incs, err := s.CountIncarnations(ctx)
	must(t, err)
	diff(t, "incarnation counts", incs, map[string]int{store.IncarnationApplying: 1, store.IncarnationErrorLocked: 1})
	names, err := s.IncarnationNames(ctx, store.IncarnationErrorLocked, 0)
	must(t, err)
	diff(t, "locked incarnations", names, []string{"b"})
	diff(t, "run counts", counts, map[string]int{store.RunSucceeded: 5, store.RunFailed: 1, store.RunPending: 1})
}
