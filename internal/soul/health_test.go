package soul

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/health"
	"github.com/soulstack/soulstack/internal/testutil"
)

// reports collects what a scheduler sends.
type reports struct {
	mu  sync.Mutex
	all []health.Report
}

func (r *reports) send(rep health.Report) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rep)
	return true
}

func (r *reports) changes(id string) []health.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []health.Outcome
	for _, rep := range r.all {
		for _, o := range rep.Changes {
			if o.ID() == id {
				out = append(out, o)
			}
		}
	}
	return out
}

// TestHealthSchedulerFaults runs checks through the real module runner:
// a Nagios plugin's statuses and perfdata, and the faults that must end
// UNKNOWN with why and never hurt the soul — a missing program, a hang
// past the timeout, binary output, an undefined exit code; a flapping
// check is sent at most FlapLimit times per window and the rest counted;
// a new scheduler on the same directory resumes the checks and outcomes.
func TestHealthSchedulerFaults(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	mr := &ModuleRunner{Root: root}
	run := func(ctx context.Context, w dispatch.Work) domain.Result { return mr.Run(ctx, w) }
	var rep reports
	every := 300 * time.Millisecond
	exec := func(name, command string, timeout time.Duration) health.Check {
		return health.Check{Incarnation: "inc", Name: name, Module: "core.exec.run", Params: map[string]any{"command": command}, Every: every, Timeout: timeout}
	}
	checks := []health.Check{
		exec("ok", "echo 'REDIS OK - PONG | clients=3;;;0 mem=1.5MB'", time.Second),
		exec("hang", "sleep 30", 100*time.Millisecond),
		exec("binary", `printf '\000\001\377'`, time.Second),
		exec("rc7", "echo weird; exit 7", time.Second),
		exec("flap", "if [ -f on ]; then rm on; echo CRIT; exit 2; else touch on; echo OK; fi", time.Second),
		{Incarnation: "inc", Name: "missing", Module: "core.exec.run", Params: map[string]any{"cmd": "/no/such/plugin"}, Every: every, Timeout: time.Second},
	}
	s := health.NewScheduler(health.SchedulerConfig{SID: "s1", Dir: dir, Run: run, Send: rep.send, SummaryInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	s.Set(checks)
	want := map[string]string{
		"ok": health.OK, "hang": health.Unknown, "binary": health.Unknown, "rc7": health.Unknown, "missing": health.Unknown,
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		for name, st := range want {
			cs := rep.changes("inc/" + name)
			if len(cs) == 0 || cs[0].Status != st {
				return false
			}
		}
		return len(rep.changes("inc/flap")) >= health.FlapLimit
	}, "every check's first outcome and the flapping check's limit")
	first := func(name string) health.Outcome { return rep.changes("inc/" + name)[0] }
	if o := first("ok"); o.Message != "REDIS OK - PONG" || o.Perfdata["clients"] != 3 || o.Perfdata["mem"] != 1.5 {
		t.Errorf("ok: %+v", o)
	}
	for name, frag := range map[string]string{"hang": "timed out after 100ms", "binary": "binary output", "rc7": "rc 7", "missing": "not found"} {
		if o := first(name); !strings.Contains(o.Message, frag) {
			t.Errorf("%s: message %q lacks %q", name, o.Message, frag)
		}
	}
	// The flapping check keeps flipping every 300 ms; only FlapLimit
	// changes go out within the window, the rest are counted.
	time.Sleep(6 * every)
	if n := len(rep.changes("inc/flap")); n != health.FlapLimit {
		t.Errorf("flapping check sent %d changes, want %d", n, health.FlapLimit)
	}
	var flaps int64
	for _, o := range s.Outcomes() {
		if o.Check == "flap" {
			flaps = o.Flaps
		}
	}
	if flaps < 2 {
		t.Errorf("flapping check counted %d held-back transitions, want at least 2", flaps)
	}
	cancel()
	<-done

	if _, err := os.Stat(filepath.Join(dir, health.StateFile)); err != nil {
		t.Fatal(err)
	}
	again := health.NewScheduler(health.SchedulerConfig{SID: "s1", Dir: dir, Run: run, Send: rep.send})
	if got := len(again.Checks()); got != len(checks) {
		t.Errorf("resumed %d checks, want %d", got, len(checks))
	}
	resumed := map[string]string{}
	for _, o := range again.Outcomes() {
		resumed[o.Check] = o.Status
	}
	if resumed["ok"] != health.OK || resumed["hang"] != health.Unknown {
		t.Errorf("resumed outcomes: %v", resumed)
	}
}
