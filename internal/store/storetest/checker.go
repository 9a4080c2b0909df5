package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

var checkerTests = []test{
	{"Procedures", testProcedures},
	{"Tasks", testCheckerTasks},
	{"Schedules", testSchedules},
	{"ClaimTick", testClaimTick},
	{"Leases", testLeases},
}

const procedureSource = "config:\n  timeout: 60\nsteps:\n  check:\n    action:\n      apicall: souls list\n"

func testProcedures(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := store.Procedure{Name: "fence_node", Source: procedureSource, CreatedAt: base, UpdatedAt: base}
	must(t, s.PutProcedure(ctx, p))
	must(t, s.PutProcedure(ctx, store.Procedure{Name: "cluster_fencing", Source: "steps: {}\n", CreatedAt: base, UpdatedAt: base}))
	got, err := s.GetProcedure(ctx, "fence_node")
	must(t, err)
	diff(t, "GetProcedure", got, p)
	_, err = s.GetProcedure(ctx, "nope")
	wantNotFound(t, err)

	// Put replaces the source and keeps CreatedAt.
	must(t, s.PutProcedure(ctx, store.Procedure{Name: "fence_node", Source: "steps: {}\n", CreatedAt: at(time.Hour), UpdatedAt: at(time.Hour)}))
	got, err = s.GetProcedure(ctx, "fence_node")
	must(t, err)
	diff(t, "replaced procedure", got, store.Procedure{Name: "fence_node", Source: "steps: {}\n", CreatedAt: base, UpdatedAt: at(time.Hour)})

	list, err := s.ListProcedures(ctx)
	must(t, err)
	if len(list) != 2 || list[0].Name != "cluster_fencing" || list[1].Name != "fence_node" {
		t.Fatalf("ListProcedures = %+v", list)
	}

	// Delete refuses while a schedule uses the procedure.
	must(t, s.CreateSchedule(ctx, store.Schedule{ID: "s1", Procedure: "fence_node", Cron: "*/5 * * * *"}))
	details := wantConflict(t, s.DeleteProcedure(ctx, "fence_node"))
	diff(t, "conflict details", details, []string{"s1"})
	must(t, s.DeleteSchedule(ctx, "s1"))
	must(t, s.DeleteProcedure(ctx, "fence_node"))
	wantNotFound(t, s.DeleteProcedure(ctx, "fence_node"))
}

func testCheckerTasks(t *testing.T, s store.Store) {
	ctx := t.Context()
	task := store.CheckerTask{ID: "t1", Procedure: "fence_node", Vars: map[string]any{"node": "h1", "force": true},
		Status: "RUNNING", KeeperID: "k1", CreatedAt: base, StartedAt: ptr(base),
		Log: []store.CheckerLogLine{{Time: base, Step: "check", Kind: "log", Message: "starting"}}}
	must(t, s.CreateCheckerTask(ctx, task))
	wantConflict(t, s.CreateCheckerTask(ctx, task))
	got, err := s.GetCheckerTask(ctx, "t1")
	must(t, err)
	diff(t, "GetCheckerTask", got, task)
	_, err = s.GetCheckerTask(ctx, "nope")
	wantNotFound(t, err)

	lines := []store.CheckerLogLine{
		{Time: at(time.Second), Step: "check", Kind: "condition", Message: "expect held", Data: map[string]any{"seen": []any{"a"}}},
		{Time: at(2 * time.Second), Step: "check", Kind: "attempt", Message: "attempt 1/3"},
	}
	must(t, s.AppendCheckerLog(ctx, "t1", lines))
	must(t, s.AppendCheckerLog(ctx, "t1", nil))
	wantNotFound(t, s.AppendCheckerLog(ctx, "nope", lines))

	task.Status, task.Message, task.FinishedAt = "SUCCESS", "done", ptr(at(time.Minute))
	must(t, s.UpdateCheckerTask(ctx, task))
	wantNotFound(t, s.UpdateCheckerTask(ctx, store.CheckerTask{ID: "nope", Status: "SUCCESS"}))
	got, err = s.GetCheckerTask(ctx, "t1")
	must(t, err)
	task.Log = append(task.Log, lines...)
	diff(t, "task after update", got, task)

	// Child and scheduled tasks; listing is newest first, without logs.
	must(t, s.CreateCheckerTask(ctx, store.CheckerTask{ID: "t2", Procedure: "fence_node", ParentID: "t1", Status: "PENDING", KeeperID: "k1", CreatedAt: at(time.Hour)}))
	must(t, s.CreateCheckerTask(ctx, store.CheckerTask{ID: "t3", Procedure: "vm_monitoring", ScheduleID: "s1", KeeperID: "k2", CreatedAt: at(2 * time.Hour)}))
	must(t, s.CreateCheckerTask(ctx, store.CheckerTask{ID: "t4", Procedure: "vm_monitoring", Status: "RUNNING", KeeperID: "k1", CreatedAt: at(3 * time.Hour)}))
	ids := func(procedure string, limit int) []string {
		t.Helper()
		list, err := s.ListCheckerTasks(ctx, procedure, limit)
		must(t, err)
		out := []string{}
		for _, tk := range list {
			if tk.Log != nil {
				t.Fatalf("ListCheckerTasks returned a log for %s", tk.ID)
			}
			out = append(out, tk.ID)
		}
		return out
	}
	diff(t, "all tasks", ids("", 0), []string{"t4", "t3", "t2", "t1"})
	diff(t, "fence_node tasks", ids("fence_node", 0), []string{"t2", "t1"})
	diff(t, "limited", ids("", 1), []string{"t4"})
	t3, err := s.GetCheckerTask(ctx, "t3")
	must(t, err)
	if t3.Status != "PENDING" || t3.ScheduleID != "s1" || t3.Log == nil || len(t3.Log) != 0 {
		t.Fatalf("t3 = %+v", t3)
	}

	// Keeper k1 restarts: its unfinished tasks fail; finished ones and k2's stay.
	n, err := s.FailRunningCheckerTasks(ctx, "k1", "keeper restarted", at(4*time.Hour))
	must(t, err)
	if n != 2 {
		t.Fatalf("FailRunningCheckerTasks(k1) = %d, want 2", n)
	}
	for id, want := range map[string]string{"t1": "SUCCESS", "t2": "FAILURE", "t3": "PENDING", "t4": "FAILURE"} {
		tk, err := s.GetCheckerTask(ctx, id)
		must(t, err)
		if tk.Status != want {
			t.Errorf("%s: status %s, want %s", id, tk.Status, want)
		}
		if want == "FAILURE" && (tk.RunError != "keeper restarted" || tk.FinishedAt == nil || !tk.FinishedAt.Equal(at(4*time.Hour))) {
			t.Errorf("%s: failed task %+v", id, tk)
		}
	}
	n, err = s.FailRunningCheckerTasks(ctx, "", "leader change", at(5*time.Hour))
	must(t, err)
	if n != 1 {
		t.Fatalf("FailRunningCheckerTasks(all) = %d, want 1", n)
	}
}

func testSchedules(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.PutProcedure(ctx, store.Procedure{Name: "vm_monitoring", Source: procedureSource}))
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}))
	s1 := store.Schedule{ID: "s1", Procedure: "vm_monitoring", Vars: map[string]any{"vms": []any{"a", "b"}}, Cron: "*/5 * * * *",
		OwnerID: "a1", CreatedAt: at(time.Minute)}
	s0 := store.Schedule{ID: "s0", Procedure: "vm_monitoring", Cron: "0 * * * *", OwnerID: "a1", CreatedAt: base}
	must(t, s.CreateSchedule(ctx, s1))
	must(t, s.CreateSchedule(ctx, s0))
	wantConflict(t, s.CreateSchedule(ctx, s1))
	wantNotFound(t, s.CreateSchedule(ctx, store.Schedule{ID: "s2", Procedure: "ghost", Cron: "* * * * *"}))
	list, err := s.ListSchedules(ctx)
	must(t, err)
	s0.Owner, s1.Owner = "root", "root"
	diff(t, "ListSchedules", list, []store.Schedule{s0, s1})
	must(t, s.DeleteSchedule(ctx, "s1"))
	wantNotFound(t, s.DeleteSchedule(ctx, "s1"))
	list, err = s.ListSchedules(ctx)
	must(t, err)
	diff(t, "after delete", list, []store.Schedule{s0})
}

func testClaimTick(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.PutProcedure(ctx, store.Procedure{Name: "p", Source: procedureSource}))
	must(t, s.CreateSchedule(ctx, store.Schedule{ID: "s1", Procedure: "p", Cron: "*/5 * * * *"}))
	must(t, s.CreateSchedule(ctx, store.Schedule{ID: "s2", Procedure: "p", Cron: "*/5 * * * *"}))
	claim := func(id string, tick time.Time) bool {
		t.Helper()
		ok, err := s.ClaimTick(ctx, id, tick)
		must(t, err)
		return ok
	}
	if !claim("s1", base) {
		t.Fatal("first claim refused")
	}
	if claim("s1", base) {
		t.Fatal("second claim of the same tick granted")
	}
	// The same instant in another zone is the same tick.
	if claim("s1", base.In(time.FixedZone("X", -7*3600))) {
		t.Fatal("claim of the same tick in another zone granted")
	}
	if !claim("s1", at(5*time.Minute)) || !claim("s2", base) {
		t.Fatal("claims of other ticks refused")
	}
	_, err := s.ClaimTick(ctx, "ghost", base)
	wantNotFound(t, err)

	// Deleting the schedule drops its claims; a new schedule with that id starts clean.
	must(t, s.DeleteSchedule(ctx, "s1"))
	must(t, s.CreateSchedule(ctx, store.Schedule{ID: "s1", Procedure: "p", Cron: "*/5 * * * *"}))
	if !claim("s1", base) {
		t.Fatal("claim after re-creating the schedule refused")
	}
}

func testLeases(t *testing.T, s store.Store) {
	ctx := t.Context()
	try := func(holder string, now time.Time) bool {
		t.Helper()
		ok, err := s.TryLease(ctx, "leader", holder, 10*time.Second, now)
		must(t, err)
		return ok
	}
	if !try("k1", base) {
		t.Fatal("k1 could not take a free lease")
	}
	if try("k2", at(5*time.Second)) {
		t.Fatal("k2 took k1's live lease")
	}
	if !try("k1", at(8*time.Second)) { // renew until 18s
		t.Fatal("k1 could not renew")
	}
	if try("k2", at(15*time.Second)) {
		t.Fatal("k2 took the renewed lease")
	}
	if !try("k2", at(18*time.Second)) { // expired exactly now
		t.Fatal("k2 could not take the expired lease")
	}
	if try("k1", at(20*time.Second)) {
		t.Fatal("k1 took k2's lease")
	}
	// Leases are independent by name.
	ok, err := s.TryLease(ctx, "schedules", "k1", time.Second, at(20*time.Second))
	must(t, err)
	if !ok {
		t.Fatal("k1 could not take another lease")
	}

	must(t, s.ReleaseLease(ctx, "leader", "k1")) // not the holder: no effect
	if try("k1", at(21*time.Second)) {
		t.Fatal("release by a non-holder freed the lease")
	}
	must(t, s.ReleaseLease(ctx, "leader", "k2"))
	if !try("k1", at(21*time.Second)) {
		t.Fatal("k1 could not take the released lease")
	}
}
