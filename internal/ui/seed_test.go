package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// seed fills st through the store API with a small fleet: four souls, a
// service, an incarnation "cache" with a committed create and a failed
// rolling restart (waves 1 and 2, web-2 failed, db-1 never reached), an
// incarnation "queue" with a run in progress, a procedure with a failed
// task and its step log, and a schedule. Operator- and host-controlled
// text carries xss.
func seed(t *testing.T, st store.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seeding %s: %v", what, err)
		}
	}
	at := func(d time.Duration) time.Time { return now.Add(d) }

	souls := []store.Soul{
		{SID: "web-1.example", Status: store.SoulConnected, Covens: []string{"prod", "web"}, Version: "0.1.0",
			Soulprint: map[string]any{"os": map[string]any{"family": "debian", "arch": "amd64"},
				"network": map[string]any{"primary_ip": "10.0.0.1"}, "motd": xss}},
		{SID: "web-2.example", Status: store.SoulConnected, Covens: []string{"prod", "web"},
			Soulprint: map[string]any{"os": map[string]any{"family": "debian"}, "network": map[string]any{"primary_ip": "10.0.0.2"}}},
		{SID: "db-1.example", Status: store.SoulDisconnected, Covens: []string{"db", "prod"},
			Soulprint: map[string]any{"os": map[string]any{"family": "redhat"}}},
		{SID: "new-host", Status: store.SoulPending, PublicKey: []byte("pk")},
	}
	for _, s := range souls {
		if s.PublicKey == nil {
			s.PublicKey = []byte("key-" + s.SID)
		}
		s.LastSeen = at(-2 * time.Minute)
		must("soul "+s.SID, st.UpsertSoul(ctx, s))
	}
	must("service", st.CreateService(ctx, store.Service{
		Name: "redis", Git: "file:///srv/git/redis.git", Ref: "v1.2.0", Commit: commit, Description: "Redis with sentinel",
	}))

	// cache: created (committed), then a rolling restart that failed in wave 2.
	members := []string{"db-1.example", "web-1.example", "web-2.example"}
	must("incarnation cache", st.CreateIncarnation(ctx, store.Incarnation{
		Name: "cache", Service: "redis", Ref: "v1.2.0", Commit: commit, Covens: []string{"prod"},
		Input: map[string]any{"password": "****", "port": 6379}, Members: members,
	}, store.Run{ID: runCreate, Scenario: "create", Input: map[string]any{"password": "****"}, CreatedAt: at(-time.Hour)}))
	must("create running", st.SetRunStatus(ctx, runCreate, store.RunRunning, at(-time.Hour)))
	var create []store.HostResult
	for _, sid := range members {
		create = append(create, store.HostResult{RunID: runCreate, Seq: 1, Path: "1", TaskName: "install redis", SID: sid,
			Wave: 1, Status: "changed", Changed: true, Stdout: "installed redis-server", DurationMS: 1200,
			StartedAt: at(-time.Hour), FinishedAt: at(-time.Hour + 2*time.Second)})
	}
	must("create results", st.RecordResults(ctx, create))
	must("create commit", st.CommitRun(ctx, runCreate, map[string]any{"master": "web-1.example", "port": 6379, "note": xss},
		store.Snapshot{Summary: map[string]any{ // the engine's counts (issue 23)
			"hosts": 3, "hosts_changed": 3, "hosts_failed": 0, "ok": 0, "changed": 3, "failed": 0, "skipped": 0,
		}}, at(-59*time.Minute)))

	must("restart start", st.StartRun(ctx, store.Run{ID: runRestart, Incarnation: "cache", Scenario: "restart",
		ArchonID: "op-1", CreatedAt: at(-10 * time.Minute)}))
	must("restart running", st.SetRunStatus(ctx, runRestart, store.RunRunning, at(-10*time.Minute)))
	res := func(seq int, path, task, sid string, wave int, status string, f func(*store.HostResult)) store.HostResult {
		r := store.HostResult{RunID: runRestart, Seq: seq, Path: path, TaskName: task, SID: sid, Wave: wave, Status: status,
			DurationMS: 40, StartedAt: at(-10 * time.Minute), FinishedAt: at(-10*time.Minute + time.Second)}
		if f != nil {
			f(&r)
		}
		return r
	}
	must("restart results", st.RecordResults(ctx, []store.HostResult{
		res(1, "1", "probe role", "db-1.example", 1, "ok", func(r *store.HostResult) { r.Stdout = "role:slave" }),
		res(1, "1", "probe role", "web-1.example", 1, "ok", func(r *store.HostResult) { r.Stdout = "role:master" }),
		res(1, "1", "probe role", "web-2.example", 1, "ok", func(r *store.HostResult) { r.Stdout = "role:slave" }),
		res(2, "2", "restart replicas", "web-1.example", 1, "changed", func(r *store.HostResult) { r.Changed = true }),
		res(3, "2.1", "wait for sync", "web-1.example", 1, "skipped", nil),
		res(2, "2", "restart replicas", "web-2.example", 2, "failed", func(r *store.HostResult) {
			r.RC, r.Msg, r.Stderr = 1, "redis-server did not come back", "Job for redis-server.service failed "+xss
		}),
	}))
	must("restart finish", st.FinishRun(ctx, runRestart, store.RunFailed,
		`task "restart replicas" failed on web-2.example`, at(-9*time.Minute)))

	// queue: a create that is still running; only web-1 has reported.
	must("incarnation queue", st.CreateIncarnation(ctx, store.Incarnation{
		Name: "queue", Service: "redis", Ref: "v1.2.0", Commit: commit, Members: []string{"web-1.example", "web-2.example"},
	}, store.Run{ID: runQueue, Scenario: "create", CreatedAt: at(-time.Minute)}))
	must("queue running", st.SetRunStatus(ctx, runQueue, store.RunRunning, at(-time.Minute)))
	must("queue results", st.RecordResults(ctx, []store.HostResult{{RunID: runQueue, Seq: 1, Path: "1", TaskName: "install redis",
		SID: "web-1.example", Wave: 1, Status: "ok", StartedAt: at(-time.Minute), FinishedAt: at(-time.Minute + time.Second)}}))

	// Checker.
	must("procedure", st.PutProcedure(ctx, store.Procedure{Name: "fence_node",
		Source: "vars:\n  node: {type: string}\nsteps:\n  check:\n    action:\n      log: \"" + xss + "\"\n"}))
	started, finished := at(-5*time.Minute), at(-4*time.Minute)
	must("checker task", st.CreateCheckerTask(ctx, store.CheckerTask{
		ID: taskID, Procedure: "fence_node", Vars: map[string]any{"node": "web-2.example"}, Status: "FAILURE",
		RunError: "step check: AttemptsLimitReached", StartedAt: &started, FinishedAt: &finished, CreatedAt: started,
		Log: []store.CheckerLogLine{
			{Time: started, Step: "check", Kind: "condition", Message: "souls list → 3 souls"},
			{Time: started.Add(time.Second), Step: "check", Kind: "attempt", Message: "attempt 1/3: expect failed",
				Data: map[string]any{"seen": "disconnected"}},
			{Time: started.Add(2 * time.Second), Step: "check", Kind: "error", Message: "AttemptsLimitReached " + xss},
		},
	}))
	must("schedule", st.CreateSchedule(ctx, store.Schedule{ID: "sched-1", Procedure: "fence_node",
		Vars: map[string]any{"node": "db-1.example"}, Cron: "*/5 * * * *"}))
}
