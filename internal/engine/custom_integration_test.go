package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
)

// TestRealSoulsCustomModule drives a custom module of the service through
// the real gateway and a real soul: called by a scenario task and inside a
// destiny bundle and delegated to a balancer inside a wave, it runs, its
// typed output is committed, a re-run changes nothing and a check run
// changes nothing either.
func TestRealSoulsCustomModule(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gateway and real souls")
	}
	out := t.TempDir()
	fsys := fstest.MapFS{
		"service.yml": {Data: []byte(defaultManifest)},
		"modules/mark/module.yml": {Data: []byte(`summary: Keep a marker file
check_mode: true
params:
  path: {type: string, required: true}
output:
  count: {type: integer}
`)},
		"modules/mark/run": {Mode: 0o755, Data: []byte(`#!/bin/sh
cat >/dev/null
if [ -f "$SOUL_PARAM_PATH" ]; then
  echo '{"changed":false,"output":{"count":1}}'
  exit 0
fi
[ "$SOUL_CHECK" = 1 ] || echo marked > "$SOUL_PARAM_PATH"
printf '%s\n' '{"changed":true,"diff":"+marked\\n","output":{"count":1}}'
`)},
		"scenario/create/main.yml": {Data: []byte(`
input:
  dir: {type: string, required: true}
state_changes:
  sets: {count: "${ register.m.hosts['a'].count }"}
tasks:
  - name: mark
    module: service.mark
    register: m
    params: {path: "${ input.dir + '/scenario' }"}
  - name: in a destiny
    apply:
      destiny: d
      input: {dir: "${ input.dir }"}
`)},
		"scenario/drain/main.yml": {Data: []byte(`
input:
  dir: {type: string, required: true}
tasks:
  - name: waves
    on: [web]
    serial: 1
    block:
      - name: drain
        module: service.mark
        delegate: [lb]
        params: {path: "${ input.dir + '/drained-' + delegated_for.sid }"}
`)},
		"destiny/d/main.yml": {Data: []byte(`
input:
  dir: {type: string, required: true}
tasks:
  - name: mark too
    module: service.mark
    params: {path: "${ input.dir + '/destiny' }"}
`)},
	}
	svc, ps := dsl.LoadFS(fsys)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	f := startRealFleet(t, svc)
	// Custom modules refuse a soul's --root (their programs cannot be
	// confined); the program here only writes under out.
	f.unconfined = true
	f.soul("a", "prod", "web")
	f.soul("lb", "prod", "lb")
	ctx := context.Background()
	input := map[string]any{"dir": out}

	id, err := f.eng.CreateIncarnation(ctx, engine.CreateRequest{Name: "app-prod", Service: "app", Covens: []string{"prod"}, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	if run := f.wait(id); run.Status != store.RunSucceeded {
		t.Fatalf("create %s: %s", run.Status, run.Error)
	}
	for _, n := range []string{"scenario", "destiny"} {
		if b, err := os.ReadFile(filepath.Join(out, n)); err != nil || string(b) != "marked\n" {
			t.Errorf("%s marker: %q %v", n, b, err)
		}
	}
	if inc, _ := f.store.GetIncarnation(ctx, "app-prod"); inc.State["count"] != float64(1) && inc.State["count"] != int64(1) {
		t.Errorf("committed count = %#v", inc.State["count"])
	}
	run := f.runScenario("create", input)
	rs, _ := f.store.ListResults(ctx, run.ID)
	for _, r := range rs {
		if run.Status != store.RunSucceeded || r.Changed {
			t.Errorf("re-run: %s; %s on %s: %s %q", run.Status, r.TaskName, r.SID, r.Status, r.Msg)
		}
	}

	// Delegated to the balancer inside a wave: the lb soul runs the module
	// for a.
	if run := f.runScenario("drain", input); run.Status != store.RunSucceeded {
		t.Fatalf("drain %s: %s", run.Status, run.Error)
	}
	if _, err := os.Stat(filepath.Join(out, "drained-a")); err != nil {
		t.Errorf("the delegated custom module did not run: %v", err)
	}

	// Check mode: the module declares check_mode, so it runs and says what
	// it would change; nothing is written.
	if err := os.Remove(filepath.Join(out, "scenario")); err != nil {
		t.Fatal(err)
	}
	cid, err := f.eng.StartRun(ctx, "app-prod", "create", input, true, "")
	if err != nil {
		t.Fatal(err)
	}
	crun := f.wait(cid)
	rs, _ = f.store.ListResults(ctx, crun.ID)
	var mark store.HostResult
	for _, r := range rs {
		if r.TaskName == "mark" {
			mark = r
		}
	}
	if !mark.Changed || !strings.Contains(mark.Diff, "+marked") {
		t.Errorf("check run: %s; mark: %+v", crun.Status, mark)
	}
	if _, err := os.Stat(filepath.Join(out, "scenario")); !os.IsNotExist(err) {
		t.Errorf("the check run wrote the marker: %v", err)
	}
}
