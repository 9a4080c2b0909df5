package dsl

import (
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func loadExample(t *testing.T, name string) *Service {
	t.Helper()
	svc, problems := Load(filepath.Join(examplesDir, name))
	if len(problems) > 0 {
		t.Fatalf("examples/%s: %v", name, problems)
	}
	return svc
}

// ignorePositions compares the model without positions and raw files.
var ignorePositions = cmp.Options{
	cmpopts.IgnoreFields(Task{}, "Pos", "KeyPos"),
	cmpopts.IgnoreFields(Retry{}, "Pos"),
	cmpopts.IgnoreFields(Serial{}, "Pos"),
	cmpopts.IgnoreFields(On{}, "Pos"),
	cmpopts.IgnoreFields(Apply{}, "Pos"),
	cmpopts.IgnoreFields(InputSpec{}, "Pos"),
	cmpopts.IgnoreFields(StateChanges{}, "Pos", "SetPos"),
}

func TestSeedRollingRestartModel(t *testing.T) {
	svc := loadExample(t, "the-service")
	s := svc.Scenarios["rolling-restart"]
	if s == nil {
		t.Fatal("scenario rolling-restart not loaded")
	}
	render := func(reg, path string) *Task {
		return &Task{
			Module:   "core.file.rendered",
			Register: reg,
			Params: map[string]any{
				"path":     "/etc/the-service/the-service.conf",
				"template": "templates/the-service.conf.tmpl",
				"vars":     map[string]any{"max_memory": "${ input.max_memory }"},
				"mode":     "0640",
			},
			Path: path,
		}
	}
	restart := func(on, path string) *Task {
		return &Task{Module: "core.service.restarted", Onchanges: []string{on}, Timeout: 30 * time.Second, Params: map[string]any{"name": "the-service"}, Path: path}
	}
	r1 := render("svc_conf", "1.0")
	r1.Name = "Render service config"
	x1 := restart("svc_conf", "1.1")
	x1.Name = "Restart the service because config changed"
	r2 := render("master_conf", "2.0")
	r2.Name = "Render service config on the master"
	x2 := restart("master_conf", "2.1")
	x2.Name = "Restart the master because config changed"
	want := []*Task{
		{
			Name: "Detect actual replication role per host", Module: "core.cmd.shell", Register: "node_role",
			ChangedWhen: "false", FailedWhen: "size(register.node_role) < incarnation.host_count",
			Params: map[string]any{"cmd": "the-service role | head -1"}, Path: "0",
		},
		{
			Name:   "Rolling config update on replicas, one host at a time",
			Where:  `register.node_role.stdout == "replica"`,
			Serial: &Serial{Count: 1},
			Block: []*Task{r1, x1, {
				Name: "Wait until the host is healthy again", Module: "core.exec.run", ChangedWhen: "false",
				Retry:      &Retry{Count: 12, Delay: 5 * time.Second, Until: `contains(register.self.stdout, "status:ok")`},
				FailedWhen: `!contains(register.self.stdout, "status:ok")`,
				Params:     map[string]any{"cmd": "the-service", "args": []any{"healthcheck"}},
				Path:       "1.2",
			}},
			Path: "1",
		},
		{
			Name:    "Update and restart the master last, on its own",
			Where:   `register.node_role.stdout == "master"`,
			RunOnce: true,
			Block:   []*Task{r2, x2},
			Path:    "2",
		},
	}
	if diff := cmp.Diff(want, s.Tasks, ignorePositions); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Inputs{{Name: "max_memory", Type: InputString, Default: "512mb", HasDefault: true}}, s.Input, ignorePositions); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"max_memory": "${ input.max_memory }"}, s.StateChanges.Sets); diff != "" {
		t.Errorf("state_changes (-want +got):\n%s", diff)
	}
	if !s.Tasks[0].IsProbe() || s.Tasks[1].IsProbe() {
		t.Error("IsProbe does not follow changed_when: false")
	}
	// Positions point at the task and at its keys.
	wait := s.Tasks[1].Block[2]
	if got, want := wait.Pos, (Pos{File: "scenario/rolling-restart/main.yml", Line: 45, Col: 9}); got != want {
		t.Errorf("health-gate task at %v, want %v", got, want)
	}
	if got := wait.KeyPos["retry"].Line; got != 48 {
		t.Errorf("retry key at line %d, want 48", got)
	}
	if _, ok := s.Files["templates/the-service.conf.tmpl"]; !ok {
		t.Errorf("scenario files = %v, want the template", sortedKeys(s.Files))
	}
}

func TestSeedRedisRestartModel(t *testing.T) {
	svc := loadExample(t, "redis")
	s := svc.Scenarios["restart"]
	want := []*Task{
		{
			Name: "Detect actual redis role per host", Module: "core.exec.run", Register: "redis_role",
			ChangedWhen: "false", FailedWhen: "size(register.redis_role) < incarnation.host_count",
			Params: map[string]any{"command": "redis-cli role | head -1"}, Path: "0",
		},
		{
			Name: "Rolling restart of replicas, two at a time", Module: "core.service.restarted",
			Where: "register.redis_role.stdout == 'slave'", Serial: &Serial{Count: 2},
			Params: map[string]any{"name": "redis-server"}, Path: "1",
		},
	}
	if diff := cmp.Diff(want, s.Tasks, ignorePositions); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if in := s.Input.Get("drain_timeout"); in == nil || in.Type != InputString || in.Required || in.HasDefault {
		t.Errorf("drain_timeout input = %+v", in)
	}
	prov := svc.Scenarios["provision"].Tasks
	if prov[1].On == nil || !prov[1].On.Keeper || prov[2].On == nil || !cmp.Equal(prov[2].On.Covens, []string{"baremetal"}) {
		t.Errorf("on: forms not parsed: %+v %+v", prov[1].On, prov[2].On)
	}
	if a := prov[2].Apply; a == nil || a.Destiny != "kernel-tuning" || a.Input["somaxconn"] != "${ essence.somaxconn }" {
		t.Errorf("apply = %+v", a)
	}
	if got := svc.Essence(nil, "", nil)["redis_version"]; got != "7.0.15" {
		t.Errorf("essence redis_version = %v", got)
	}
}

func TestParseDestinyMatchesLoad(t *testing.T) {
	svc := loadExample(t, "redis")
	for name, loaded := range svc.Destinies {
		t.Run(name, func(t *testing.T) {
			parsed, err := ParseDestiny(name, loaded.Files, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The key order of a parsed destiny holds its own files' maps;
			// a loaded one uses the service's (Service.KeyOrder).
			if diff := cmp.Diff(loaded, parsed, cmpopts.IgnoreFields(Destiny{}, "KeyOrder")); diff != "" {
				t.Errorf("ParseDestiny differs from Load (-load +parse):\n%s", diff)
			}
		})
	}
	d := svc.Destinies["redis"]
	if diff := cmp.Diff([]string{"password"}, d.Input.Secrets()); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"version": "${ input.version }", "config_changed": "${ register.conf.changed }"}, d.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestParseDestinyInvalidBundle(t *testing.T) {
	_, err := ParseDestiny("x", map[string][]byte{
		"main.yml": []byte("tasks:\n  - module: core.file.rendered\n    params: {path: /a, template: templates/a.tmpl}\n  - module: core.test.ping\n    on: keeper\n"),
	}, nil)
	problems, ok := err.(Problems)
	if !ok {
		t.Fatalf("error = %v (%T), want Problems", err, err)
	}
	want := []string{
		"destiny/x/main.yml:3:34: template templates/a.tmpl does not exist in destiny/x",
		"destiny/x/main.yml:5:5: on: is scenario-only: a destiny runs on the host it is applied to; put targeting on the scenario task that applies it",
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if _, err := ParseDestiny("y", map[string][]byte{}, nil); err == nil || !strings.Contains(err.Error(), "destiny y has no main.yml") {
		t.Errorf("empty bundle error = %v", err)
	}
}

func TestIncludeSplice(t *testing.T) {
	fsys := fstest.MapFS{
		"service.yml": {Data: []byte("name: inc\n")},
		"scenario/s/main.yml": {Data: []byte(`tasks:
  - name: first
    module: core.test.ping
  - include: more.yml
  - name: guarded
    include: more.yml
    when: true
`)},
		"scenario/s/more.yml": {Data: []byte("- name: a\n  module: core.test.ping\n- name: b\n  module: core.test.ping\n")},
	}
	svc, problems := LoadFS(fsys)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	type row struct {
		Path, Name, Include string
		Pos                 Pos
	}
	var got []row
	var walk func([]*Task)
	walk = func(ts []*Task) {
		for _, t := range ts {
			got = append(got, row{t.Path, t.Name, t.Include, t.Pos})
			walk(t.Block)
		}
	}
	walk(svc.Scenarios["s"].Tasks)
	main, more := "scenario/s/main.yml", "scenario/s/more.yml"
	want := []row{
		{"0", "first", "", Pos{main, 2, 5}},
		{"1", "a", "", Pos{more, 1, 3}},
		{"2", "b", "", Pos{more, 3, 3}},
		{"3", "guarded", "more.yml", Pos{main, 5, 5}},
		{"3.0", "a", "", Pos{more, 1, 3}},
		{"3.1", "b", "", Pos{more, 3, 3}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if c := svc.Counts(); c != (Counts{Scenarios: 1, Tasks: 6}) {
		t.Errorf("Counts = %+v", c)
	}
}
