package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

var catalogTests = []test{
	{"Services", testServices},
	{"CreateIncarnation", testCreateIncarnation},
	{"Membership", testMembership},
	{"DeleteIncarnation", testDeleteIncarnation},
	{"SetIncarnationCommit", testSetIncarnationCommit},
}

func service(name string) store.Service {
	return store.Service{Name: name, Git: "file:///srv/git/" + name, Ref: "v1", Commit: "c0ffee", Description: name + " service",
		CreatedAt: base, UpdatedAt: base}
}

// newIncarnation creates service svc (if needed) and incarnation name with
// members and its creation run "<name>-create", left active.
func newIncarnation(t *testing.T, s store.Store, svc, name string, members ...string) store.Run {
	t.Helper()
	ctx := t.Context()
	if _, err := s.GetService(ctx, svc); err != nil {
		must(t, s.CreateService(ctx, service(svc)))
	}
	run := store.Run{ID: name + "-create", Scenario: "create", KeeperID: "k1", CreatedAt: base}
	must(t, s.CreateIncarnation(ctx, store.Incarnation{Name: name, Service: svc, Ref: "v1", Commit: "c0ffee",
		Covens: []string{"redis"}, Members: members, CreatedAt: base}, run))
	run.Incarnation, run.Status = name, store.RunPending
	return run
}

// readyIncarnation is newIncarnation with the creation run committed.
func readyIncarnation(t *testing.T, s store.Store, svc, name string, members ...string) {
	t.Helper()
	run := newIncarnation(t, s, svc, name, members...)
	must(t, s.CommitRun(t.Context(), run.ID, map[string]any{"created": true}, store.Snapshot{}, at(time.Minute)))
}

func testServices(t *testing.T, s store.Store) {
	ctx := t.Context()
	redis := service("redis")
	must(t, s.CreateService(ctx, redis))
	wantConflict(t, s.CreateService(ctx, redis))
	must(t, s.CreateService(ctx, service("apache")))

	got, err := s.GetService(ctx, "redis")
	must(t, err)
	diff(t, "GetService", got, redis)
	_, err = s.GetService(ctx, "nope")
	wantNotFound(t, err)
	list, err := s.ListServices(ctx)
	must(t, err)
	diff(t, "ListServices", list, []store.Service{service("apache"), redis})

	redis.Ref, redis.Commit, redis.Git, redis.Description, redis.UpdatedAt = "v2", "beef", "https://x/redis.git", "new", at(time.Hour)
	must(t, s.UpdateService(ctx, redis))
	got, err = s.GetService(ctx, "redis")
	must(t, err)
	diff(t, "updated service", got, redis)
	wantNotFound(t, s.UpdateService(ctx, service("nope")))

	// Delete refuses while an incarnation uses the service.
	readyIncarnation(t, s, "redis", "cache")
	details := wantConflict(t, s.DeleteService(ctx, "redis"))
	diff(t, "conflict details", details, []string{"cache"})
	must(t, s.DeleteIncarnation(ctx, "cache"))
	must(t, s.DeleteService(ctx, "redis"))
	wantNotFound(t, s.DeleteService(ctx, "redis"))
	_, err = s.GetService(ctx, "redis")
	wantNotFound(t, err)
}

func testCreateIncarnation(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.CreateService(ctx, service("redis")))
	inc := store.Incarnation{
		Name: "cache", Service: "redis", Ref: "v1", Commit: "c0ffee",
		Covens:  []string{"redis", "dc1", "redis"},
		Input:   map[string]any{"password": "****", "port": float64(6379)},
		Essence: map[string]any{"maxmemory": "1gb"},
		Status:  store.IncarnationReady, State: map[string]any{"ignored": true}, ActiveRun: "ignored",
		Members:   []string{"h2", "h1", "h2"},
		CreatedAt: base,
	}
	run := store.Run{ID: "r1", Incarnation: "ignored", Scenario: "create", Input: map[string]any{"n": float64(1)},
		ArchonID: "a1", KeeperID: "k1", CreatedAt: base}
	must(t, s.CreateIncarnation(ctx, inc, run))

	got, err := s.GetIncarnation(ctx, "cache")
	must(t, err)
	want := inc
	want.Covens, want.Members = []string{"dc1", "redis"}, []string{"h1", "h2"}
	want.Status, want.State, want.ActiveRun, want.UpdatedAt = store.IncarnationApplying, map[string]any{}, "r1", base
	diff(t, "GetIncarnation", got, want)

	gotRun, err := s.GetRun(ctx, "r1")
	must(t, err)
	run.Incarnation, run.Status = "cache", store.RunPending
	diff(t, "creation run", gotRun, run)

	// The name is taken; nothing of the second attempt is written.
	err = s.CreateIncarnation(ctx, store.Incarnation{Name: "cache", Service: "redis"}, store.Run{ID: "r2", Scenario: "create"})
	wantConflict(t, err)
	_, err = s.GetRun(ctx, "r2")
	wantNotFound(t, err)
	// The service must exist; nothing is written either.
	err = s.CreateIncarnation(ctx, store.Incarnation{Name: "other", Service: "ghost"}, store.Run{ID: "r3", Scenario: "create"})
	wantNotFound(t, err)
	_, err = s.GetIncarnation(ctx, "other")
	wantNotFound(t, err)
	// A run id that exists already rolls the whole creation back.
	err = s.CreateIncarnation(ctx, store.Incarnation{Name: "dup", Service: "redis", Members: []string{"h1"}},
		store.Run{ID: "r1", Scenario: "create"})
	wantConflict(t, err)
	_, err = s.GetIncarnation(ctx, "dup")
	wantNotFound(t, err)

	_, err = s.GetIncarnation(ctx, "nope")
	wantNotFound(t, err)

	// Minimal incarnation: nil maps and lists read back as documented.
	must(t, s.CreateIncarnation(ctx, store.Incarnation{Name: "bare", Service: "redis"}, store.Run{ID: "r4", Scenario: "create"}))
	bare, err := s.GetIncarnation(ctx, "bare")
	must(t, err)
	if bare.Input != nil || bare.Essence != nil || bare.State == nil || bare.Covens == nil || bare.Members == nil {
		t.Fatalf("bare incarnation: %+v", bare)
	}

	list, err := s.ListIncarnations(ctx)
	must(t, err)
	if len(list) != 2 || list[0].Name != "bare" || list[1].Name != "cache" {
		t.Fatalf("ListIncarnations = %+v", list)
	}
	diff(t, "listed incarnation", list[1], want)
	diff(t, "listed bare members", list[0].Members, []string{})
}

// testMembership: the membership relation is explicit and does not follow
// later coven changes of the souls.
func testMembership(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, so := range []store.Soul{soul("h1", "redis"), soul("h2", "redis"), soul("h3", "redis")} {
		must(t, s.UpsertSoul(ctx, so))
	}
	readyIncarnation(t, s, "redis", "cache", "h1", "h2")

	members := func() []string {
		t.Helper()
		inc, err := s.GetIncarnation(ctx, "cache")
		must(t, err)
		return inc.Members
	}
	diff(t, "members", members(), []string{"h1", "h2"})

	// h3 carries the coven but is not a member; h1 loses the coven but stays one.
	must(t, s.SetSoulCovens(ctx, "h1", []string{"postgres"}))
	must(t, s.SetSoulCovens(ctx, "h3", []string{"redis", "dc1"}))
	diff(t, "members after coven changes", members(), []string{"h1", "h2"})

	must(t, s.AddMembers(ctx, "cache", []string{"h3", "h2", "h9"}))
	diff(t, "after AddMembers", members(), []string{"h1", "h2", "h3", "h9"})
	must(t, s.RemoveMembers(ctx, "cache", []string{"h1", "h8"}))
	diff(t, "after RemoveMembers", members(), []string{"h2", "h3", "h9"})
	wantNotFound(t, s.AddMembers(ctx, "ghost", []string{"h1"}))
	wantNotFound(t, s.RemoveMembers(ctx, "ghost", []string{"h1"}))

	// Members of another incarnation are separate.
	readyIncarnation(t, s, "redis", "other", "h1")
	diff(t, "members unchanged by another incarnation", members(), []string{"h2", "h3", "h9"})
	list, err := s.ListIncarnations(ctx)
	must(t, err)
	diff(t, "listed members", [][]string{list[0].Members, list[1].Members}, [][]string{{"h2", "h3", "h9"}, {"h1"}})
}

func testDeleteIncarnation(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache", "h1")
	details := wantConflict(t, s.DeleteIncarnation(ctx, "cache"))
	diff(t, "conflict details", details, run.ID)

	must(t, s.RecordResults(ctx, []store.HostResult{{RunID: run.ID, Seq: 1, SID: "h1", Status: "ok", StartedAt: base, FinishedAt: base}}))
	must(t, s.AddTriggers(ctx, []store.PendingTrigger{{Incarnation: "cache", Scenario: "create", Task: "restart", SID: "h1", RunID: run.ID}}))
	must(t, s.CommitRun(ctx, run.ID, map[string]any{"a": "b"}, store.Snapshot{}, at(time.Minute)))
	must(t, s.DeleteIncarnation(ctx, "cache"))
	wantNotFound(t, s.DeleteIncarnation(ctx, "cache"))

	_, err := s.GetIncarnation(ctx, "cache")
	wantNotFound(t, err)
	_, err = s.GetRun(ctx, run.ID)
	wantNotFound(t, err)
	results, err := s.ListResults(ctx, run.ID)
	must(t, err)
	history, err := s.ListHistory(ctx, "cache", 0)
	must(t, err)
	triggers, err := s.ListTriggers(ctx, "cache", "")
	must(t, err)
	if len(results)+len(history)+len(triggers) != 0 {
		t.Fatalf("leftovers after delete: %d results, %d snapshots, %d triggers", len(results), len(history), len(triggers))
	}

	// The name can be reused, with fresh membership.
	newIncarnation(t, s, "redis", "cache", "h2")
	inc, err := s.GetIncarnation(ctx, "cache")
	must(t, err)
	diff(t, "members of the new incarnation", inc.Members, []string{"h2"})
}

func testSetIncarnationCommit(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "redis", "cache")
	wantConflict(t, s.SetIncarnationCommit(ctx, "cache", "v2", "beef"))
	must(t, s.FinishRun(ctx, run.ID, store.RunSucceeded, "", at(time.Minute)))
	must(t, s.SetIncarnationCommit(ctx, "cache", "v2", "beef"))
	inc, err := s.GetIncarnation(ctx, "cache")
	must(t, err)
	if inc.Ref != "v2" || inc.Commit != "beef" {
		t.Fatalf("after upgrade: ref %q commit %q", inc.Ref, inc.Commit)
	}
	wantNotFound(t, s.SetIncarnationCommit(ctx, "ghost", "v2", "beef"))
}
