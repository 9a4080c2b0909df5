package cli

import (
	"sort"
	"strings"
	"time"
)

// runEvent is one event of GET /v1/runs/{id}/events (the engine's Event):
// run (started), task (started, with its target), wave (started, with its
// hosts), host (one host's final result of a task), done.
type runEvent struct {
	Type   string      `json:"type"`
	Status string      `json:"status"`
	Error  string      `json:"error"`
	Path   string      `json:"path"`
	Task   string      `json:"task"`
	Wave   int         `json:"wave"`
	Hosts  []string    `json:"hosts"`
	Result *hostResult `json:"result"`
}

// hostResult is a host event's result: a hostView with its task.
type hostResult struct {
	hostView
	Path string `json:"path"`
	Task string `json:"task"`
}

// Event types of the run event stream.
const (
	evRun  = "run"
	evTask = "task"
	evWave = "wave"
	evHost = "host"
	evDone = "done"
)

// runModel is what is known of a run in flight, merged from fetches of the
// run record (authoritative for results) and live events (targets and
// waves, which the record does not carry).
type runModel struct {
	run    runView
	tasks  []*taskState
	byKey  map[string]*taskState
	order  []unitKey        // units in the order they appeared
	seen   map[unitKey]bool // units in order
	events bool             // task events were seen: targets are known
}

// taskState is one task of the run.
type taskState struct {
	idx     int
	key     string // path, or name when the record has no path
	name    string
	target  map[string]int // sid → wave; 0 while the host awaits its wave
	serial  bool           // waves of its own were announced
	waves   map[int][]string
	results map[string]hostView
}

func newRunModel() *runModel {
	return &runModel{byKey: map[string]*taskState{}, seen: map[unitKey]bool{}}
}

func (m *runModel) task(key, name string) *taskState {
	if t := m.byKey[key]; t != nil {
		if t.name == "" {
			t.name = name
		}
		return t
	}
	t := &taskState{idx: len(m.tasks), key: key, name: name, target: map[string]int{},
		waves: map[int][]string{}, results: map[string]hostView{}}
	m.tasks = append(m.tasks, t)
	m.byKey[key] = t
	return t
}

// record merges a fetched run record.
func (m *runModel) record(r runView) {
	m.run = r
	// Units new in this record are noted in the order they started (a
	// serial block interleaves its tasks wave by wave), else in task order.
	type fresh struct {
		t     *taskState
		wave  int
		start time.Time
	}
	var news []fresh
	at := map[unitKey]int{}
	for _, tv := range r.Tasks {
		key := tv.Path
		if key == "" {
			key = tv.Name
		}
		t := m.task(key, tv.Name)
		for _, h := range tv.Hosts {
			t.results[h.SID] = h
			k := unitKey{t.idx, h.Wave}
			if m.seen[k] {
				continue
			}
			i, ok := at[k]
			if !ok {
				at[k] = len(news)
				news = append(news, fresh{t, h.Wave, h.StartedAt})
				continue
			}
			if !h.StartedAt.IsZero() && (news[i].start.IsZero() || h.StartedAt.Before(news[i].start)) {
				news[i].start = h.StartedAt
			}
		}
	}
	sort.SliceStable(news, func(a, b int) bool {
		sa, sb := news[a].start, news[b].start
		return !sa.IsZero() && !sb.IsZero() && sa.Before(sb)
	})
	for _, n := range news {
		m.note(n.t, n.wave)
	}
}

// event merges a live event.
func (m *runModel) event(ev runEvent) {
	switch ev.Type {
	case evTask:
		m.events = true
		t := m.task(ev.Path, ev.Task)
		w := m.ancestorWave(ev.Path)
		for _, sid := range ev.Hosts {
			if _, ok := t.target[sid]; !ok {
				t.target[sid] = w
			}
		}
		if w > 0 && len(ev.Hosts) > 0 {
			m.note(t, w)
		}
	case evWave:
		t := m.task(ev.Path, ev.Task)
		if !t.serial {
			// The task event put every target host on the enclosing
			// wave; the hosts of a serial task wait for their own.
			t.serial = true
			for sid := range t.target {
				t.target[sid] = 0
			}
		}
		t.waves[ev.Wave] = ev.Hosts
		for _, sid := range ev.Hosts {
			t.target[sid] = ev.Wave
		}
		m.note(t, ev.Wave)
	case evHost:
		if ev.Result == nil {
			return
		}
		t := m.task(ev.Result.Path, ev.Result.Task)
		t.results[ev.Result.SID] = ev.Result.hostView
		m.note(t, ev.Result.Wave)
	case evRun:
		if ev.Status != "" {
			m.run.Status = ev.Status
		}
	case evDone:
		m.run.Status, m.run.Error = ev.Status, ev.Error
	}
}

// note records that unit (t, wave) exists, keeping appearance order.
func (m *runModel) note(t *taskState, wave int) {
	k := unitKey{t.idx, wave}
	if !m.seen[k] {
		m.seen[k] = true
		m.order = append(m.order, k)
	}
}

// ancestorWave is the wave a task inside a serial block runs in: the last
// wave announced by the nearest enclosing serial block; 1 outside any.
// A serial task's own hosts get theirs from its wave events (0 until then).
func (m *runModel) ancestorWave(path string) int {
	for p := parentPath(path); p != ""; p = parentPath(p) {
		if t := m.byKey[p]; t != nil && t.serial {
			last := 0
			for w := range t.waves {
				last = max(last, w)
			}
			return last
		}
	}
	return 1
}

func parentPath(p string) string {
	i := strings.LastIndexByte(p, '.')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// container reports whether t is a block: other tasks live under its path.
func (m *runModel) container(t *taskState) bool {
	for _, o := range m.tasks {
		if strings.HasPrefix(o.key, t.key+".") {
			return true
		}
	}
	return false
}

// unitOf builds the unit k: its hosts (results, else running).
func (m *runModel) unitOf(k unitKey) unit {
	t := m.tasks[k.task]
	hosts := map[string]hostView{}
	for sid, w := range t.target {
		if w == k.wave {
			hosts[sid] = hostView{SID: sid, Wave: w, Status: "running"}
		}
	}
	for sid, h := range t.results {
		if h.Wave == k.wave {
			hosts[sid] = h
		}
	}
	u := unit{key: k, name: t.name, multiWave: m.rolling(t)}
	if u.name == "" {
		u.name = t.key
	}
	for _, sid := range sortedKeys(hosts) {
		u.hosts = append(u.hosts, hosts[sid])
	}
	return u
}

// rolling reports whether t runs in waves: it or an enclosing block is
// serial, or (known from records alone) it or a task of its block has
// results past wave 1.
func (m *runModel) rolling(t *taskState) bool {
	if t.serial || m.ancestorWave(t.key) > 1 {
		return true
	}
	for p := parentPath(t.key); p != ""; p = parentPath(p) {
		if a := m.byKey[p]; a != nil && a.serial {
			return true
		}
	}
	block := parentPath(t.key)
	for _, o := range m.tasks {
		if o != t && (block == "" || !strings.HasPrefix(o.key, block+".")) {
			continue
		}
		for _, h := range o.results {
			if h.Wave > 1 {
				return true
			}
		}
	}
	return false
}

// movedPast reports whether the run went beyond unit i of m.order, so that
// no more hosts join it: a later unit exists — for a task inside a block,
// one outside the block, or the block is known to roll in waves (its
// tasks interleave wave by wave, and the wave headers must come first).
func (m *runModel) movedPast(i int) bool {
	if i >= len(m.order)-1 {
		return false
	}
	t := m.tasks[m.order[i].task]
	block := parentPath(t.key)
	if block == "" || m.rolling(t) {
		return true
	}
	for _, k := range m.order[i+1:] {
		if !strings.HasPrefix(m.tasks[k.task].key, block+".") {
			return true
		}
	}
	return false
}

// waveHosts are the hosts of wave w of the serial task enclosing (or being)
// t, for the wave header; nil when no wave was announced.
func (m *runModel) waveHosts(t *taskState, w int) []string {
	for p := t.key; p != ""; p = parentPath(p) {
		if a := m.byKey[p]; a != nil && a.serial {
			if hs, ok := a.waves[w]; ok {
				out := append([]string(nil), hs...)
				sort.Strings(out)
				return out
			}
		}
	}
	return nil
}
