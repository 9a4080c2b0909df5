package healthkeeper

import (
	"context"
	"encoding/json"
	"time"

	"github.com/soulstack/soulstack/internal/health"
	"github.com/soulstack/soulstack/internal/store"
)

// maxOutcomesPerReport bounds what one report may carry (a soul has a
// check per incarnation and file; far fewer in practice).
const maxOutcomesPerReport = 10000

// OnHealth takes a soul's report: it updates the known states, queues the
// writes and publishes the transitions. It never blocks on the store.
func (m *Manager) OnHealth(sid string, b []byte) {
	var r health.Report
	if err := json.Unmarshal(b, &r); err != nil {
		m.log.Warn("ignoring an undecodable health report", "sid", sid, "err", err)
		return
	}
	if len(r.Changes)+len(r.Summary) > maxOutcomesPerReport {
		m.log.Warn("ignoring an oversized health report", "sid", sid, "outcomes", len(r.Changes)+len(r.Summary))
		return
	}
	now := time.Now().UTC()
	var events []Event
	var changes []Change
	m.mu.Lock()
	for i, o := range append(r.Changes, r.Summary...) {
		if o.Incarnation == "" || o.Check == "" || !validStatus(o.Status) {
			continue
		}
		key := o.Incarnation + "/" + o.Check + "/" + sid
		prev, known := m.states[key]
		if ev, ok := m.applyLocked(sid, o, now); ok {
			events = append(events, ev)
			c := Change{Incarnation: o.Incarnation, Check: o.Check, SID: sid, From: ev.From, To: ev.To, Message: ev.Message, Streak: 1, Time: now}
			if known {
				c.Duration = now.Sub(prev.Since)
			}
			m.lastFrom[key] = c
			changes = append(changes, c)
		} else if i < len(r.Changes) && o.Streak > 1 && o.Streak <= health.MaxReportedStreak {
			// A confirmation of the last transition (CRITICAL twice in a row).
			if c, ok := m.lastFrom[key]; ok && c.To == o.Status {
				c.Streak, c.Message, c.Time = o.Streak, o.Message, now
				changes = append(changes, c)
			}
		}
	}
	if r.RunID != "" {
		if w := m.waiters[r.RunID]; w != nil {
			w.add(sid, r.Changes)
		}
	}
	m.mu.Unlock()
	m.metrics.reports.Inc()
	for _, ev := range events {
		m.metrics.transitions.WithLabelValues(ev.To).Inc()
		m.events.publish(ev)
	}
	if m.cfg.OnChange != nil {
		for _, c := range changes {
			m.cfg.OnChange(c)
		}
	}
}

func validStatus(s string) bool {
	switch s {
	case health.OK, health.Warning, health.Critical, health.Unknown:
		return true
	}
	return false
}

// applyLocked merges one outcome into the known state and queues its
// write; a status change is a transition, stored unless the check flaps
// faster than the history's rate limit (then it is counted in Flaps).
func (m *Manager) applyLocked(sid string, o health.Outcome, now time.Time) (Event, bool) {
	key := o.Incarnation + "/" + o.Check + "/" + sid
	prev, known := m.states[key]
	st := store.HealthState{Incarnation: o.Incarnation, Check: o.Check, SID: sid, Status: o.Status,
		Message: o.Message, Perfdata: o.Perfdata, Since: o.Since.UTC(), CheckedAt: o.CheckedAt.UTC(), ReportedAt: now,
		Flaps: o.Flaps}
	if st.Since.IsZero() {
		st.Since = now
	}
	if known {
		st.Flaps = max(st.Flaps, prev.Flaps)
	}
	changed := !known || prev.Status != st.Status
	m.pending = append(m.pending, st)
	if !changed {
		m.states[key] = st
		return Event{}, false
	}
	from := prev.Status
	if !known {
		from = o.Previous
	}
	ev := Event{Type: "health.transition", Incarnation: o.Incarnation, Check: o.Check, SID: sid, From: from, To: st.Status, Message: st.Message, Time: now}
	if from == st.Status || from == "" {
		// A first outcome, or one this keeper learns after it started
		// from an unchanged soul: not a transition.
		m.states[key] = st
		return Event{}, false
	}
	recent := m.history[key][:0]
	for _, t := range m.history[key] {
		if now.Sub(t) < historyWindow {
			recent = append(recent, t)
		}
	}
	if len(recent) < historyLimit {
		recent = append(recent, now)
		m.trans = append(m.trans, store.HealthTransition{Incarnation: o.Incarnation, Check: o.Check, SID: sid,
			From: from, To: st.Status, Message: st.Message, At: now})
	} else {
		st.Flaps++
		m.pending[len(m.pending)-1].Flaps = st.Flaps
		m.metrics.flaps.Inc()
	}
	m.history[key] = recent
	m.states[key] = st
	return ev, true
}

// OnVitals keeps a soul's vital signs for the next flush.
func (m *Manager) OnVitals(sid string, b []byte) {
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil || v == nil {
		m.log.Warn("ignoring undecodable vital signs", "sid", sid, "err", err)
		return
	}
	m.mu.Lock()
	m.vitals[sid] = store.Vitals{SID: sid, Vitals: v, At: time.Now().UTC()}
	m.mu.Unlock()
}

// flush writes the queued states, transitions and vital signs, each kind
// in one transaction. States are deduplicated by key (the last wins).
func (m *Manager) flush(ctx context.Context) {
	m.mu.Lock()
	pending, trans, vitals := m.pending, m.trans, m.vitals
	m.pending, m.trans, m.vitals = nil, nil, map[string]store.Vitals{}
	m.mu.Unlock()
	if len(pending) == 0 && len(trans) == 0 && len(vitals) == 0 {
		return
	}
	last := map[string]int{}
	states := make([]store.HealthState, 0, len(pending))
	for _, st := range pending {
		k := st.Incarnation + "/" + st.Check + "/" + st.SID
		if i, ok := last[k]; ok {
			states[i] = st
			continue
		}
		last[k] = len(states)
		states = append(states, st)
	}
	if err := m.cfg.Store.PutHealthStates(ctx, states); err != nil {
		m.log.Warn("recording health states", "count", len(states), "err", err)
	} else {
		m.metrics.writes.WithLabelValues("states").Add(float64(len(states)))
		m.metrics.batches.Inc()
	}
	if err := m.cfg.Store.AddHealthTransitions(ctx, trans); err != nil {
		m.log.Warn("recording health transitions", "count", len(trans), "err", err)
	} else if len(trans) > 0 {
		m.metrics.writes.WithLabelValues("transitions").Add(float64(len(trans)))
		m.metrics.batches.Inc()
	}
	if len(vitals) > 0 {
		vs := make([]store.Vitals, 0, len(vitals))
		for _, v := range vitals {
			vs = append(vs, v)
		}
		if err := m.cfg.Store.PutVitals(ctx, vs); err != nil {
			m.log.Warn("recording vital signs", "count", len(vs), "err", err)
		} else {
			m.metrics.writes.WithLabelValues("vitals").Add(float64(len(vs)))
			m.metrics.batches.Inc()
		}
	}
}
