package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
)

// Defaults of the scheduler.
const (
	// DefaultSummaryInterval is how often a soul sends its summary.
	DefaultSummaryInterval = time.Minute
	// FlapLimit transitions of one check within FlapWindow are sent at
	// once; more are held back and counted until the window slides.
	FlapLimit  = 5
	FlapWindow = 5 * time.Minute
	// StateFile is the scheduler's file in the soul's data directory: the
	// checks and their last outcomes, so a restart resumes them.
	StateFile = "health.json"
)

// RunFunc runs one module call on this host (the soul's runner).
type RunFunc func(ctx context.Context, w dispatch.Work) domain.Result

// SendFunc delivers a report to the Keeper; false when it could not (no
// stream): changes are then carried by the next summary.
type SendFunc func(Report) bool

// SchedulerConfig configures a Scheduler.
type SchedulerConfig struct {
	// SID seeds the per-check phase, so a fleet does not run in lockstep.
	SID string
	// Dir keeps StateFile ("" = nothing kept).
	Dir  string
	Run  RunFunc
	Send SendFunc
	// SummaryInterval is how often every outcome is sent (0 = default).
	SummaryInterval time.Duration
	Logger          *slog.Logger
	// Now is the clock (nil = time.Now).
	Now func() time.Time
}

// Scheduler runs a soul's health checks on their schedule, with or without
// a Keeper connection.
type Scheduler struct {
	cfg SchedulerConfig
	log *slog.Logger

	mu       sync.Mutex
	checks   map[string]Check
	outcomes map[string]Outcome
	flaps    map[string][]time.Time // recent transition times per check
	stops    map[string]context.CancelFunc
	ctx      context.Context
	wg       sync.WaitGroup
}

// persisted is StateFile's content.
type persisted struct {
	Checks   []Check   `json:"checks"`
	Outcomes []Outcome `json:"outcomes"`
}

// NewScheduler returns a scheduler that resumes the checks kept in
// cfg.Dir, if any. Start runs them.
func NewScheduler(cfg SchedulerConfig) *Scheduler {
	if cfg.SummaryInterval <= 0 {
		cfg.SummaryInterval = DefaultSummaryInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{cfg: cfg, log: log, checks: map[string]Check{}, outcomes: map[string]Outcome{},
		flaps: map[string][]time.Time{}, stops: map[string]context.CancelFunc{}}
	if cfg.Dir != "" {
		if b, err := os.ReadFile(filepath.Join(cfg.Dir, StateFile)); err == nil {
			var p persisted
			if err := json.Unmarshal(b, &p); err != nil {
				log.Warn("ignoring an unreadable health state file", "err", err)
			} else {
				for _, c := range p.Checks {
					s.checks[c.ID()] = c
				}
				for _, o := range p.Outcomes {
					if _, ok := s.checks[o.ID()]; ok {
						s.outcomes[o.ID()] = o
					}
				}
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			log.Warn("cannot read the health state file", "err", err)
		}
	}
	return s
}

// Run runs the checks and the summary until ctx ends, then waits for the
// running checks.
func (s *Scheduler) Run(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	for id, c := range s.checks {
		s.startLocked(id, c)
	}
	s.mu.Unlock()
	// Summaries start at a random point of the interval, so a fleet that
	// connected together does not send them together.
	t := time.NewTimer(rand.N(s.cfg.SummaryInterval) + 1)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.wg.Wait()
			return
		case <-t.C:
			s.SendSummary()
			t.Reset(s.cfg.SummaryInterval)
		}
	}
}

// Set replaces the set of checks: new and changed checks start (keeping
// the outcome of a changed one), removed ones stop and are forgotten.
func (s *Scheduler) Set(checks []Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]Check{}
	for _, c := range checks {
		if c.Every <= 0 || c.Timeout <= 0 {
			s.log.Warn("ignoring a health check without every or timeout", "check", c.ID())
			continue
		}
		want[c.ID()] = c
	}
	for id, old := range s.checks {
		c, keep := want[id]
		if keep && sameCheck(old, c) {
			continue
		}
		if stop := s.stops[id]; stop != nil {
			stop()
			delete(s.stops, id)
		}
		delete(s.checks, id)
		if !keep {
			delete(s.outcomes, id)
			delete(s.flaps, id)
		}
	}
	for id, c := range want {
		if _, running := s.checks[id]; running {
			continue
		}
		s.checks[id] = c
		if s.ctx != nil {
			s.startLocked(id, c)
		}
	}
	s.persistLocked()
}

func sameCheck(a, b Check) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// Checks returns the current checks, by ID.
func (s *Scheduler) Checks() []Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Check, 0, len(s.checks))
	for _, c := range s.checks {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// Outcomes returns the current outcomes, by ID.
func (s *Scheduler) Outcomes() []Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outcomesLocked()
}

func (s *Scheduler) outcomesLocked() []Outcome {
	out := make([]Outcome, 0, len(s.outcomes))
	for _, o := range s.outcomes {
		o.Previous = ""
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// SendSummary sends every current outcome now (also after a reconnect).
func (s *Scheduler) SendSummary() {
	s.mu.Lock()
	r := Report{Summary: s.outcomesLocked(), IsSummary: true}
	s.mu.Unlock()
	s.cfg.Send(r)
}

// RunNow runs incarnation's after_runs checks at once and sends their
// outcomes in one report answering runID.
func (s *Scheduler) RunNow(ctx context.Context, incarnation, runID string) {
	s.mu.Lock()
	var cs []Check
	for _, c := range s.checks {
		if c.Incarnation == incarnation && c.AfterRuns {
			cs = append(cs, c)
		}
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		r := Report{RunID: runID, Changes: []Outcome{}}
		for _, c := range cs {
			o, _ := s.runOne(ctx, c)
			r.Changes = append(r.Changes, o)
		}
		s.cfg.Send(r)
	}()
}

// startLocked starts check c's loop; s.mu is held.
func (s *Scheduler) startLocked(id string, c Check) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.stops[id] = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.loop(ctx, c)
	}()
}

// phase is where in its period a check runs on this soul: a stable offset
// from the SID and the check, so restarts keep the rhythm and a fleet
// spreads over the period.
func (s *Scheduler) phase(c Check) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s.cfg.SID + "\x00" + c.ID()))
	return time.Duration(h.Sum64() % uint64(c.Every))
}

// loop runs c every c.Every until ctx ends. The first run waits for the
// check's phase, or runs soon when its last outcome is older than a period
// (a restarted soul catches up).
func (s *Scheduler) loop(ctx context.Context, c Check) {
	now := s.cfg.Now()
	s.mu.Lock()
	last, seen := s.outcomes[c.ID()]
	s.mu.Unlock()
	first := s.phase(c) - time.Duration(now.UnixNano()%int64(c.Every))
	if first < 0 {
		first += c.Every
	}
	if !seen || now.Sub(last.CheckedAt) > c.Every {
		first = min(first, rand.N(min(c.Every, 2*time.Second)))
	}
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := s.cfg.Now()
		o, _ := s.runOne(ctx, c)
		if ctx.Err() != nil {
			return
		}
		s.record(c, o)
		// Keep the rhythm: the next run is one period after this one began
		// (a slow check does not drift the schedule), with a little jitter.
		next := c.Every - s.cfg.Now().Sub(start) + rand.N(c.Every/50+1)
		t.Reset(max(next, 0))
	}
}

// runOne runs c once, bounded by its timeout.
func (s *Scheduler) runOne(ctx context.Context, c Check) (Outcome, error) {
	cctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	params := c.Params
	if params == nil {
		params = map[string]any{}
	}
	r := s.run(cctx, c, params)
	o := Interpret(c, r, cctx.Err())
	o.CheckedAt = s.cfg.Now().UTC()
	return o, cctx.Err()
}

// run calls the runner, turning a panic into an UNKNOWN result.
func (s *Scheduler) run(ctx context.Context, c Check, params map[string]any) (r domain.Result) {
	defer func() {
		if p := recover(); p != nil {
			r = domain.Result{Failed: true, RC: -1, Msg: fmt.Sprintf("check panicked: %v", p)}
		}
	}()
	return s.cfg.Run(ctx, dispatch.Work{Call: &dispatch.Call{Module: c.Module, Params: params}})
}

// record keeps o as c's outcome; a changed status is sent at once unless
// the check is flapping.
func (s *Scheduler) record(c Check, o Outcome) {
	s.mu.Lock()
	id := c.ID()
	if _, ok := s.checks[id]; !ok {
		s.mu.Unlock()
		return // removed meanwhile
	}
	prev, seen := s.outcomes[id]
	o.Since, o.Flaps = o.CheckedAt, prev.Flaps
	changed := !seen || prev.Status != o.Status
	o.Streak = 1
	if seen && !changed {
		o.Since = prev.Since
		o.Streak = min(prev.Streak+1, MaxReportedStreak+1)
		o.Previous = prev.Previous
	}
	// A confirmation (the same status again, up to MaxReportedStreak) is
	// sent like a change: rules wait for it.
	send := seen && !changed && o.Streak <= MaxReportedStreak && o.Streak > 1
	if changed {
		o.Previous = prev.Status
		now := s.cfg.Now()
		recent := s.flaps[id][:0]
		for _, t := range s.flaps[id] {
			if now.Sub(t) < FlapWindow {
				recent = append(recent, t)
			}
		}
		if len(recent) < FlapLimit {
			recent = append(recent, now)
			send = true
		} else {
			o.Flaps++
		}
		s.flaps[id] = recent
	}
	s.outcomes[id] = o
	if changed {
		s.persistLocked()
	}
	s.mu.Unlock()
	if send {
		s.cfg.Send(Report{Changes: []Outcome{o}})
	}
}

// persistLocked writes StateFile; s.mu is held.
func (s *Scheduler) persistLocked() {
	if s.cfg.Dir == "" {
		return
	}
	p := persisted{Outcomes: s.outcomesLocked()}
	for _, c := range s.checks {
		p.Checks = append(p.Checks, c)
	}
	sort.Slice(p.Checks, func(i, j int) bool { return p.Checks[i].ID() < p.Checks[j].ID() })
	b, err := json.Marshal(p)
	if err == nil {
		tmp := filepath.Join(s.cfg.Dir, StateFile+".tmp")
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, filepath.Join(s.cfg.Dir, StateFile))
		}
	}
	if err != nil {
		s.log.Warn("cannot keep the health state", "err", err)
	}
}
