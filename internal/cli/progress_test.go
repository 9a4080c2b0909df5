package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runScript builds the event stream and run records of a run over three
// hosts: a plain task, then a serial: 1 block of two tasks whose second
// task fails on the host of wave 2 (so wave 3 never starts).
type runScript struct {
	id   string
	rec  runView
	evs  []runEvent
	done runView
}

func newRunScript() *runScript {
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	end := start.Add(2500 * time.Millisecond)
	s := &runScript{id: "r-1"}
	s.rec = runView{ApplyID: "r-1", Incarnation: "hello-dev", Scenario: "greet", Status: "running", StartedAt: &start}
	n := 0
	host := func(path, task, sid string, wave int, status string, changed bool) runEvent {
		n++
		return runEvent{Type: evHost, Result: &hostResult{Path: path, Task: task,
			hostView: hostView{SID: sid, Wave: wave, Status: status, Changed: changed, DurationMS: 20,
				StartedAt: start.Add(time.Duration(n) * 100 * time.Millisecond)}}}
	}
	all := []string{"h1", "h2", "h3"}
	s.evs = []runEvent{
		{Type: evRun, Status: "running"},
		{Type: evTask, Path: "0", Task: "Write the greeting", Hosts: all},
		host("0", "Write the greeting", "h2", 1, "changed", true),
		host("0", "Write the greeting", "h1", 1, "ok", false),
		host("0", "Write the greeting", "h3", 1, "changed", true),
		{Type: evTask, Path: "1", Task: "Roll out", Hosts: all},
		{Type: evWave, Path: "1", Task: "Roll out", Wave: 1, Hosts: []string{"h1"}},
		{Type: evTask, Path: "1.0", Task: "Reload", Hosts: []string{"h1"}},
		host("1.0", "Reload", "h1", 1, "changed", true),
		{Type: evTask, Path: "1.1", Task: "Check", Hosts: []string{"h1"}},
		host("1.1", "Check", "h1", 1, "ok", false),
		{Type: evWave, Path: "1", Task: "Roll out", Wave: 2, Hosts: []string{"h2"}},
		{Type: evTask, Path: "1.0", Task: "Reload", Hosts: []string{"h2"}},
		host("1.0", "Reload", "h2", 2, "changed", true),
		{Type: evTask, Path: "1.1", Task: "Check", Hosts: []string{"h2"}},
	}
	failed := host("1.1", "Check", "h2", 2, "failed", false)
	failed.Result.RC = 1
	failed.Result.Msg = "failed_when: the greeting is not served"
	failed.Result.Stderr = "cat: greeting.txt: No such file or directory\n"
	s.evs = append(s.evs, failed, runEvent{Type: evDone, Status: "failed"})

	s.done = s.rec
	s.done.Status, s.done.FinishedAt = "failed", &end
	s.done.Error = `task "Check" failed on h2`
	for _, ev := range s.evs {
		if ev.Type != evHost {
			continue
		}
		r := ev.Result
		var t *taskView
		for i := range s.done.Tasks {
			if s.done.Tasks[i].Path == r.Path {
				t = &s.done.Tasks[i]
			}
		}
		if t == nil {
			s.done.Tasks = append(s.done.Tasks, taskView{Name: r.Task, Path: r.Path})
			t = &s.done.Tasks[len(s.done.Tasks)-1]
		}
		t.Hosts = append(t.Hosts, r.hostView)
	}
	return s
}

const wantPlain = `run r-1: scenario greet on incarnation hello-dev
  [ok] Write the greeting: 3/3 ok, 2 changed (20ms)
  wave 1: h1
  [ok] Reload: 1/1 ok, 1 changed (20ms)
  [ok] Check: 1/1 ok (20ms)
  wave 2: h2
  [ok] Reload: 1/1 ok, 1 changed (20ms)
  [FAILED] Check: 0/1 ok, 1 failed (20ms)
      h2: failed (rc 1): failed_when: the greeting is not served
        | cat: greeting.txt: No such file or directory
[FAILED] failed in 2.5s: 3 tasks, 3 hosts, 4 changed, 1 failed
  error: task "Check" failed on h2
`

// TestProgressPlainFromEvents is the non-terminal form: every line final,
// in order, from the live events, then the summary from the final record.
func TestProgressPlainFromEvents(t *testing.T) {
	s := newRunScript()
	var out bytes.Buffer
	p := newProgress(&out, false)
	p.record(s.rec)
	for i, ev := range s.evs {
		p.event(ev)
		if i == 4 && !strings.Contains(out.String(), "Write the greeting: 3/3 ok") {
			t.Errorf("the first task is not reported as soon as its last host answered:\n%s", out.String())
		}
	}
	p.record(s.done)
	if d := cmp.Diff(wantPlain, out.String()); d != "" {
		t.Errorf("progress (-want +got):\n%s\ngot:\n%s", d, out.String())
	}
	if strings.Contains(out.String(), "\r") || strings.Contains(out.String(), "\033[") {
		t.Error("the plain form has terminal control sequences")
	}
}

// TestProgressPlainFromRecords is the same run followed by polling only
// (no event stream): the same lines, wave headers included, the block's
// tasks in the order they started.
func TestProgressPlainFromRecords(t *testing.T) {
	s := newRunScript()
	var out bytes.Buffer
	p := newProgress(&out, false)
	p.record(s.rec)
	// A record in the middle: the first task and wave 1 of the block.
	mid := s.done
	mid.Status, mid.FinishedAt, mid.Error = "running", nil, ""
	mid.Tasks = []taskView{s.done.Tasks[0], {Name: "Reload", Path: "1.0", Hosts: s.done.Tasks[1].Hosts[:1]}}
	p.record(mid)
	p.record(s.done)
	want := wantPlain
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("progress (-want +got):\n%s\ngot:\n%s", d, out.String())
	}
}

// TestProgressLive redraws the task in flight on a status line, with the
// running hosts counted, and clears it before final lines.
func TestProgressLive(t *testing.T) {
	s := newRunScript()
	var out bytes.Buffer
	p := newProgress(&out, true)
	p.record(s.rec)
	for _, ev := range s.evs[:3] {
		p.event(ev)
	}
	if !strings.Contains(out.String(), "\r\033[K  … Write the greeting  1/3 ok, 1 changed, 2 running") {
		t.Errorf("no live status line with the running hosts:\n%q", out.String())
	}
	for _, ev := range s.evs[3:] {
		p.event(ev)
	}
	p.record(s.done)
	got := out.String()
	if !strings.Contains(got, "\r\033[K  ✓ Write the greeting: 3/3 ok, 2 changed (20ms)\n") {
		t.Errorf("final task line does not replace the status line:\n%q", got)
	}
	if !strings.HasSuffix(got, "✗ failed in 2.5s: 3 tasks, 3 hosts, 4 changed, 1 failed\n  error: task \"Check\" failed on h2\n") {
		t.Errorf("summary:\n%q", got)
	}
}

func TestHostSummary(t *testing.T) {
	hs := []hostView{{Status: "ok"}, {Status: "changed", Changed: true}, {Status: "running"}, {Status: "changed", Changed: true}, {Status: "ok"}}
	if got, want := hostSummary(hs, false), "4/5 ok, 2 changed, 1 running"; got != want {
		t.Errorf("hostSummary = %q, want %q", got, want)
	}
	hs = []hostView{{Status: "skipped"}, {Status: "unreachable"}, {Status: "failed"}}
	if got, want := hostSummary(hs, false), "0/3 ok, 1 skipped, 1 failed, 1 unreachable"; got != want {
		t.Errorf("hostSummary = %q, want %q", got, want)
	}
}

// TestProgressLateSubscriber: the event stream connected after wave 1 of
// the block (a fast run): the record shows wave 1, the events the rest.
// The wave 1 lines wait until the block is known to roll, so the wave
// headers still come first.
func TestProgressLateSubscriber(t *testing.T) {
	s := newRunScript()
	var out bytes.Buffer
	p := newProgress(&out, false)
	mid := s.done
	mid.Status, mid.FinishedAt, mid.Error = "running", nil, ""
	mid.Tasks = []taskView{s.done.Tasks[0],
		{Name: "Reload", Path: "1.0", Hosts: s.done.Tasks[1].Hosts[:1]},
		{Name: "Check", Path: "1.1", Hosts: s.done.Tasks[2].Hosts[:1]}}
	p.record(mid)
	if got := out.String(); strings.Contains(got, "Reload") {
		t.Fatalf("wave 1 of the block printed before the block is known to roll:\n%s", got)
	}
	for i, ev := range s.evs {
		if ev.Type == evWave && ev.Wave == 2 {
			for _, ev := range s.evs[i:] {
				p.event(ev)
			}
			break
		}
	}
	p.record(s.done)
	if d := cmp.Diff(wantPlain, out.String()); d != "" {
		t.Errorf("progress (-want +got):\n%s\ngot:\n%s", d, out.String())
	}
}
