package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
)

// progress renders a run as it advances, from fetches of the run record
// and the run's live events: a header, one line per task (per wave for
// rolling tasks) with a per-host summary once the task is done there, wave
// headers as waves start, each failed host with its message and stderr,
// and a summary at the end. On a terminal (live) the task in flight is
// shown on a status line redrawn in place; otherwise every line is final,
// so logs read top to bottom.
type progress struct {
	w       io.Writer
	live    bool
	m       *runModel
	started bool
	ended   bool
	printed map[unitKey]bool
	headed  map[string]bool // wave headers printed, by serial path and wave
	status  bool            // a live status line is on screen
}

func newProgress(w io.Writer, live bool) *progress {
	return &progress{w: w, live: live, m: newRunModel(), printed: map[unitKey]bool{}, headed: map[string]bool{}}
}

// unitKey names a task on a wave: the grain of progress lines.
type unitKey struct{ task, wave int }

// unit is a task's hosts on one wave.
type unit struct {
	key       unitKey
	name      string
	hosts     []hostView
	multiWave bool // the task rolls over several waves
}

// hostDone reports whether a host's status for a task is final.
func hostDone(status string) bool {
	switch domain.HostStatus(status) {
	case domain.StatusRunning, domain.StatusPending, "":
		return false
	}
	return true
}

func (u unit) done() bool {
	for _, h := range u.hosts {
		if !hostDone(h.Status) {
			return false
		}
	}
	return len(u.hosts) > 0
}

// record renders a fetched run record.
func (p *progress) record(r runView) {
	p.m.record(r)
	p.render(terminalRun(r.Status))
}

// event renders a live event.
func (p *progress) event(ev runEvent) {
	p.m.event(ev)
	p.render(false)
}

// render prints what became final; final is set once the run record says
// the run ended.
func (p *progress) render(final bool) {
	if p.ended {
		return
	}
	m := p.m
	if !p.started && m.run.ApplyID != "" {
		p.started = true
		p.line(fmt.Sprintf("run %s: scenario %s on incarnation %s%s", m.run.ApplyID, m.run.Scenario, m.run.Incarnation, checkTag(m.run.Check)))
	}
	var inFlight []unit
	for i, k := range m.order {
		t := m.tasks[k.task]
		if k.wave == 0 || p.printed[k] || m.container(t) {
			continue
		}
		u := m.unitOf(k)
		if u.multiWave {
			p.waveHeader(t, u)
		}
		// Without the task's target (its events were missed), a unit is
		// final once the engine moved past it or the run ended: until
		// then more hosts may join it.
		known := len(t.target) > 0
		if final || (u.done() && (known || m.movedPast(i))) {
			p.unitLines(u)
			p.printed[k] = true
			continue
		}
		inFlight = append(inFlight, u)
	}
	if final {
		p.ended = true
		p.summary(m.run)
		return
	}
	if p.live && len(inFlight) > 0 {
		parts := make([]string, len(inFlight))
		for i, u := range inFlight {
			parts[i] = u.name + "  " + hostSummary(u.hosts, p.m.run.Check)
		}
		p.clearStatus()
		fmt.Fprintf(p.w, "  … %s", strings.Join(parts, " | "))
		p.status = true
	}
}

// waveHeader prints "wave N: hosts" once per wave of a rolling task or
// block, when the wave first shows.
func (p *progress) waveHeader(t *taskState, u unit) {
	hosts := p.m.waveHosts(t, u.key.wave)
	// The waves belong to the serial task or block: its tasks share one
	// header per wave. Without events (no serial info) a task inside a
	// block is taken to roll with its block.
	key := t.key
	if pp := parentPath(t.key); pp != "" {
		key = pp
	}
	for q := t.key; q != ""; q = parentPath(q) {
		if a := p.m.byKey[q]; a != nil && a.serial {
			key = q
		}
	}
	hk := fmt.Sprintf("%s#%d", key, u.key.wave)
	if p.headed[hk] {
		return
	}
	p.headed[hk] = true
	if hosts == nil {
		for _, h := range u.hosts {
			hosts = append(hosts, h.SID)
		}
	}
	p.line(fmt.Sprintf("  wave %d: %s", u.key.wave, strings.Join(hosts, ", ")))
}

// unitLines prints a finished unit: the task line and its failed hosts.
func (p *progress) unitLines(u unit) {
	var longest int64
	bad := false
	allSkipped := true
	for _, h := range u.hosts {
		longest = max(longest, h.DurationMS)
		switch domain.HostStatus(h.Status) {
		case domain.StatusFailed, domain.StatusUnreachable:
			bad = true
		}
		if domain.HostStatus(h.Status) != domain.StatusSkipped {
			allSkipped = false
		}
	}
	mark := p.mark("ok")
	switch {
	case bad:
		mark = p.mark("failed")
	case allSkipped:
		mark = p.mark("skipped")
	}
	p.line(fmt.Sprintf("  %s %s: %s (%s)", mark, u.name, hostSummary(u.hosts, p.m.run.Check), human(time.Duration(longest)*time.Millisecond)))
	for _, h := range u.hosts {
		switch domain.HostStatus(h.Status) {
		case domain.StatusFailed, domain.StatusUnreachable:
			p.hostFailure(h)
		}
	}
}

// hostFailure prints a failed host: status, rc, message and its stderr
// (the last lines).
func (p *progress) hostFailure(h hostView) {
	head := fmt.Sprintf("      %s: %s", h.SID, h.Status)
	if h.Status == string(domain.StatusFailed) && h.RC != 0 {
		head += fmt.Sprintf(" (rc %d)", h.RC)
	}
	if m := strings.TrimSpace(h.Msg); m != "" {
		head += ": " + firstLine(m)
	}
	p.line(head)
	if se := strings.TrimSpace(h.Stderr); se != "" && strings.Contains(h.Msg, se) {
		return // the message already quotes it
	}
	for _, l := range tailLines(h.Stderr, 20) {
		p.line("        | " + l)
	}
}

// summary prints the final line of a run.
func (p *progress) summary(r runView) {
	hosts := map[string]bool{}
	changed, failed := 0, 0
	for _, t := range r.Tasks {
		if isBlock(t, r.Tasks) {
			continue // its tasks' rows count
		}
		for _, h := range t.Hosts {
			hosts[h.SID] = true
			switch domain.HostStatus(h.Status) {
			case domain.StatusFailed, domain.StatusUnreachable:
				failed++
			case domain.StatusOK, domain.StatusChanged:
				if h.Changed {
					changed++
				}
			}
		}
	}
	took := ""
	if r.StartedAt != nil && r.FinishedAt != nil {
		took = " in " + human(r.FinishedAt.Sub(*r.StartedAt))
	}
	verb := "changed"
	if r.Check {
		verb = "would change"
	}
	what := fmt.Sprintf("%s, %s, %d %s", countOf(leafTasks(r.Tasks), "task"), countOf(len(hosts), "host"), changed, verb)
	if failed > 0 {
		what += fmt.Sprintf(", %d failed", failed)
	}
	verdict := r.Status
	if r.Status == apitypes.RunSucceeded {
		verdict = p.mark("ok") + " " + r.Status
	} else {
		verdict = p.mark("failed") + " " + r.Status
	}
	p.line(fmt.Sprintf("%s%s: %s", verdict, took, what))
	if r.Error != "" {
		p.line("  error: " + r.Error)
	}
}

// leafTasks counts the tasks that are not blocks (a block's path prefixes
// its tasks' paths).
func leafTasks(ts []taskView) int {
	n := 0
	for _, t := range ts {
		if !isBlock(t, ts) {
			n++
		}
	}
	return n
}

// isBlock reports whether t holds other tasks of ts.
func isBlock(t taskView, ts []taskView) bool {
	for _, o := range ts {
		if t.Path != "" && strings.HasPrefix(o.Path, t.Path+".") {
			return true
		}
	}
	return false
}

// line prints a final line, clearing the live status line first.
func (p *progress) line(s string) {
	p.clearStatus()
	fmt.Fprintln(p.w, s)
}

func (p *progress) clearStatus() {
	if p.status {
		fmt.Fprint(p.w, "\r\033[K")
		p.status = false
	}
}

// mark is the outcome marker: symbols on a terminal, words otherwise.
func (p *progress) mark(kind string) string {
	if p.live {
		switch kind {
		case "ok":
			return "✓"
		case "failed":
			return "✗"
		default:
			return "–"
		}
	}
	switch kind {
	case "ok":
		return "[ok]"
	case "failed":
		return "[FAILED]"
	default:
		return "[skipped]"
	}
}

// hostSummary counts a unit's hosts: "3/5 ok, 1 changed, 1 running". "ok"
// counts the hosts that succeeded (changed or not); the other counts
// follow when not zero. In check mode "changed" reads "would change".
func hostSummary(hs []hostView, check bool) string {
	n := map[domain.HostStatus]int{}
	changed := 0
	for _, h := range hs {
		st := domain.HostStatus(h.Status)
		if st == "" {
			st = domain.StatusPending
		}
		n[st]++
		if h.Changed && (st == domain.StatusOK || st == domain.StatusChanged) {
			changed++
		}
	}
	s := fmt.Sprintf("%d/%d ok", n[domain.StatusOK]+n[domain.StatusChanged], len(hs))
	if changed > 0 && check {
		s += fmt.Sprintf(", %d would change", changed)
	} else if changed > 0 {
		s += fmt.Sprintf(", %d changed", changed)
	}
	for _, st := range []domain.HostStatus{domain.StatusSkipped, domain.StatusUnknown, domain.StatusFailed, domain.StatusUnreachable, domain.StatusRunning, domain.StatusPending} {
		if n[st] > 0 {
			s += fmt.Sprintf(", %d %s", n[st], st)
		}
	}
	return s
}

func checkTag(check bool) string {
	if check {
		return " (check mode: nothing changes)"
	}
	return ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// tailLines is the last n non-empty-trailing lines of s.
func tailLines(s string, n int) []string {
	s = strings.TrimRight(s, "\n")
	if strings.TrimSpace(s) == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = append([]string{fmt.Sprintf("… %d earlier lines", len(ls)-n)}, ls[len(ls)-n:]...)
	}
	return ls
}

// countOf is "1 task", "3 tasks".
func countOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
