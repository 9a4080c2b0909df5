package dispatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
)

func call(sid, task, mod string) dispatch.Request {
	return dispatch.Request{SID: sid, Work: dispatch.Work{Task: task, Call: &dispatch.Call{Module: mod}}}
}

func TestSimAnswersFromStubs(t *testing.T) {
	sim := dispatch.NewSim(
		[]dispatch.SimHost{{SID: "h1"}, {SID: "h2"}, {SID: "h3", Down: true}},
		[]dispatch.Stub{
			{Module: "core.exec.run", Task: "probe", Hosts: []string{"h2"}, Results: []domain.Result{{Stdout: "slave"}}},
			{Module: "core.exec.run", Task: "probe", Results: []domain.Result{{Stdout: "master"}}},
			{Module: "core.exec.run", Results: []domain.Result{{Stdout: "starting"}, {Stdout: "ready"}}},
			{Module: "core.service.restarted", Hosts: []string{"h1"}, Unreachable: true},
			{Module: "core.service.reloaded", Timeout: true},
		})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  dispatch.Request
		want domain.Result
	}{
		{"first matching stub wins", call("h2", "probe", "core.exec.run"), domain.Result{Stdout: "slave"}},
		{"task stub for other hosts", call("h1", "probe", "core.exec.run"), domain.Result{Stdout: "master"}},
		{"sequence: first answer", call("h1", "health", "core.exec.run"), domain.Result{Stdout: "starting"}},
		{"sequence: next answer", call("h1", "health", "core.exec.run"), domain.Result{Stdout: "ready"}},
		{"sequence: the last repeats", call("h1", "health", "core.exec.run"), domain.Result{Stdout: "ready"}},
		{"sequences count per host", call("h2", "health", "core.exec.run"), domain.Result{Stdout: "starting"}},
		{"no stub: ok, unchanged", call("h1", "x", "core.test.ping"), domain.Result{}},
		{"a host that drops the call", call("h1", "x", "core.service.restarted"), domain.Result{Unreachable: true, RC: -1}},
		{"a down host is unreachable at once", call("h3", "x", "core.test.ping"), domain.Result{Unreachable: true, RC: -1}},
		{"an unknown host is unreachable", call("zz", "x", "core.test.ping"), domain.Result{Unreachable: true, RC: -1}},
		{"timeout in simulated time", call("h2", "x", "core.service.reloaded"), domain.Result{Failed: true, RC: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sim.Dispatch(ctx, []dispatch.Request{tc.req}, nil)[tc.req.SID]
			got.Msg, got.DurationMS = "", 0
			if got.Stdout != tc.want.Stdout || got.Failed != tc.want.Failed || got.Unreachable != tc.want.Unreachable || got.RC != tc.want.RC {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if n := len(sim.Calls()); n != 9 {
		t.Errorf("%d calls recorded, want 9 (down and unknown hosts answer nothing)", n)
	}
}

func TestSimHangEndsWithTheContext(t *testing.T) {
	sim := dispatch.NewSim([]dispatch.SimHost{{SID: "h1"}}, []dispatch.Stub{{Hang: true}})
	req := call("h1", "x", "core.test.ping")
	req.Work.Timeout = 20 * time.Millisecond
	r := sim.Dispatch(context.Background(), []dispatch.Request{req}, nil)["h1"]
	if !r.Failed || !strings.Contains(r.Msg, "timed out") {
		t.Errorf("hang past the timeout: %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	r = sim.Dispatch(ctx, []dispatch.Request{call("h1", "x", "core.test.ping")}, nil)["h1"]
	if !r.Failed || !strings.Contains(r.Msg, "cancelled") {
		t.Errorf("hang cancelled: %+v", r)
	}
}

func TestSimBundleUsesTheStubs(t *testing.T) {
	sim := dispatch.NewSim([]dispatch.SimHost{{SID: "h1", Facts: map[string]any{"os": "debian"}}, {SID: "h2"}},
		[]dispatch.Stub{
			{Module: "core.file.present", Hosts: []string{"h1"}, Results: []domain.Result{{Changed: true}}},
			{Module: "core.file.present", Hosts: []string{"h2"}, Unreachable: true},
		})
	sim.RunBundle = func(ctx context.Context, b *dispatch.Bundle, facts map[string]any, check bool,
		call func(context.Context, dispatch.Call, bool, time.Duration) domain.Result) domain.Result {
		r := call(ctx, dispatch.Call{Module: "core.file.present"}, check, time.Second)
		r.Output = map[string]any{"sid": facts["sid"], "os": facts["os"], "input": b.Input["v"]}
		return r
	}
	work := dispatch.Work{Task: "apply", Bundle: &dispatch.Bundle{Destiny: "d", Input: map[string]any{"v": 1}}}
	got := sim.Dispatch(context.Background(), []dispatch.Request{{SID: "h1", Work: work}, {SID: "h2", Work: work}}, nil)
	if r := got["h1"]; !r.Changed || r.Output["sid"] != "h1" || r.Output["os"] != "debian" || r.Output["input"] != 1 {
		t.Errorf("h1 bundle: %+v", r)
	}
	if r := got["h2"]; !r.Unreachable {
		t.Errorf("h2 dropped the connection mid-bundle: %+v, want unreachable", r)
	}
}

func TestSimSetStubsRestartsSequences(t *testing.T) {
	st := []dispatch.Stub{{Results: []domain.Result{{Stdout: "1"}, {Stdout: "2"}}}}
	sim := dispatch.NewSim([]dispatch.SimHost{{SID: "h"}}, st)
	ask := func() string {
		return sim.Dispatch(context.Background(), []dispatch.Request{call("h", "t", "m")}, nil)["h"].Stdout
	}
	if a, b := ask(), ask(); a != "1" || b != "2" {
		t.Fatalf("got %s %s", a, b)
	}
	sim.SetStubs(st)
	if a := ask(); a != "1" {
		t.Errorf("after SetStubs: %s, want 1", a)
	}
}
