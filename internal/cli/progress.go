package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// progress renders a run as it advances, from successive fetches of the
// run record: a header, one line per task (per wave for rolling tasks) with
// a per-host summary once the task is done there, wave headers as waves
// start, each failed host with its message and stderr, and a summary at
// the end. On a terminal (live) the task in flight is shown on a status
// line redrawn in place; otherwise every line is final, so logs read top
// to bottom.
type progress struct {
	w        io.Writer
	live     bool
	started  bool
	printed  map[unitKey]bool
	lastWave int  // wave of the last printed wave header, 0 when none
	status   bool // a live status line is on screen
}

func newProgress(w io.Writer, live bool) *progress {
	return &progress{w: w, live: live, printed: map[unitKey]bool{}}
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

// units splits a run into its units, in task then wave order.
func units(r runView) []unit {
	var us []unit
	for ti, t := range r.Tasks {
		byWave := map[int][]hostView{}
		for _, h := range t.Hosts {
			byWave[h.Wave] = append(byWave[h.Wave], h)
		}
		waves := make([]int, 0, len(byWave))
		for w := range byWave {
			waves = append(waves, w)
		}
		sort.Ints(waves)
		multi := len(waves) > 1 || (len(waves) == 1 && waves[0] > 1)
		name := t.Name
		if name == "" {
			name = t.Path
		}
		for _, w := range waves {
			hs := byWave[w]
			sort.Slice(hs, func(i, j int) bool { return hs[i].SID < hs[j].SID })
			us = append(us, unit{key: unitKey{ti, w}, name: name, hosts: hs, multiWave: multi})
		}
	}
	return us
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
	return true
}

// update renders what is new in r.
func (p *progress) update(r runView) {
	if !p.started {
		p.started = true
		p.line(fmt.Sprintf("run %s: scenario %s on incarnation %s%s", r.ApplyID, r.Scenario, r.Incarnation, checkTag(r.Check)))
	}
	final := terminalRun(r.Status)
	us := units(r)
	var inFlight []unit
	for i, u := range us {
		if p.printed[u.key] {
			continue
		}
		// A unit is reported once its hosts are done and the engine has
		// moved past it (or the run is over): before that, more hosts may
		// still join it.
		if u.done() && (final || i < len(us)-1) {
			p.unitLines(u)
			p.printed[u.key] = true
			continue
		}
		inFlight = append(inFlight, u)
	}
	if final {
		p.summary(r)
		return
	}
	if p.live && len(inFlight) > 0 {
		parts := make([]string, len(inFlight))
		for i, u := range inFlight {
			parts[i] = u.name + "  " + hostSummary(u.hosts)
		}
		p.clearStatus()
		fmt.Fprintf(p.w, "  … %s", strings.Join(parts, " | "))
		p.status = true
	}
}

// unitLines prints a finished unit: wave header if it starts a wave, the
// task line, and its failed hosts.
func (p *progress) unitLines(u unit) {
	if u.multiWave && u.key.wave != p.lastWave {
		sids := make([]string, len(u.hosts))
		for i, h := range u.hosts {
			sids[i] = h.SID
		}
		p.line(fmt.Sprintf("  wave %d: %s", u.key.wave, strings.Join(sids, ", ")))
		p.lastWave = u.key.wave
	} else if !u.multiWave {
		p.lastWave = 0
	}
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
	p.line(fmt.Sprintf("  %s %s: %s (%s)", mark, u.name, hostSummary(u.hosts), human(time.Duration(longest)*time.Millisecond)))
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
	for _, l := range tailLines(h.Stderr, 20) {
		p.line("        | " + l)
	}
}

// summary prints the final line of a run.
func (p *progress) summary(r runView) {
	hosts := map[string]bool{}
	changed, failed := 0, 0
	for _, t := range r.Tasks {
		for _, h := range t.Hosts {
			hosts[h.SID] = true
			if h.Changed {
				changed++
			}
			switch domain.HostStatus(h.Status) {
			case domain.StatusFailed, domain.StatusUnreachable:
				failed++
			}
		}
	}
	took := ""
	if r.StartedAt != nil && r.FinishedAt != nil {
		took = " in " + human(r.FinishedAt.Sub(*r.StartedAt))
	}
	what := fmt.Sprintf("%s, %s, %d changed", countOf(len(r.Tasks), "task"), countOf(len(hosts), "host"), changed)
	if failed > 0 {
		what += fmt.Sprintf(", %d failed", failed)
	}
	verdict := r.Status
	if r.Status == store.RunSucceeded {
		verdict = p.mark("ok") + " " + r.Status
	} else {
		verdict = p.mark("failed") + " " + r.Status
	}
	p.line(fmt.Sprintf("%s%s: %s", verdict, took, what))
	if r.Error != "" {
		p.line("  error: " + r.Error)
	}
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
// follow when not zero.
func hostSummary(hs []hostView) string {
	n := map[domain.HostStatus]int{}
	changed := 0
	for _, h := range hs {
		st := domain.HostStatus(h.Status)
		if st == "" {
			st = domain.StatusPending
		}
		n[st]++
		if h.Changed {
			changed++
		}
	}
	s := fmt.Sprintf("%d/%d ok", n[domain.StatusOK]+n[domain.StatusChanged], len(hs))
	if changed > 0 {
		s += fmt.Sprintf(", %d changed", changed)
	}
	for _, st := range []domain.HostStatus{domain.StatusSkipped, domain.StatusFailed, domain.StatusUnreachable, domain.StatusRunning, domain.StatusPending} {
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
