// Package checkertest holds test helpers for the Checker: a controllable
// clock.
package checkertest

import (
	"context"
	"sort"
	"sync"
	"time"
)

// FakeClock is a controllable checker.Clock.
//
// In auto mode a Sleep advances the clock by its duration and returns at
// once, firing every timer (After) that falls due on the way — so a
// procedure that waits 3×60 s runs instantly, and a whole-task timeout
// fires when the sleeps add up past it. In manual mode Sleep blocks until
// Advance moves the clock past its deadline; BlockUntil lets a test wait
// until the code under test is asleep.
type FakeClock struct {
	mu       sync.Mutex
	now      time.Time
	auto     bool
	timers   []*timer
	sleepers int
	changed  chan struct{} // closed and replaced whenever sleepers changes
}

type timer struct {
	at time.Time
	ch chan time.Time
	// sleeping: a Sleep is blocked on this timer and counted in sleepers.
	// Firing it uncounts it at once, so a BlockUntil right after Advance
	// waits for the woken goroutine to sleep again instead of seeing it
	// still counted.
	sleeping bool
}

// NewFakeClock returns a fake clock at start; auto selects auto mode.
func NewFakeClock(start time.Time, auto bool) *FakeClock {
	return &FakeClock{now: start, auto: auto, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives once the fake clock reaches now+d.
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addTimerLocked(d).ch
}

func (c *FakeClock) addTimerLocked(d time.Duration) *timer {
	t := &timer{at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Sleep advances the clock by d (auto mode) or blocks until Advance passes
// now+d (manual mode); either way it returns ctx.Err() if ctx is done.
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.auto {
		c.advanceLocked(d)
		c.mu.Unlock()
		return ctx.Err()
	}
	t := c.addTimerLocked(d)
	t.sleeping = true
	c.setSleepersLocked(c.sleepers + 1)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if t.sleeping {
			t.sleeping = false
			c.setSleepersLocked(c.sleepers - 1)
		}
		c.removeLocked(t)
		c.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.ch:
		return nil
	}
}

// Advance moves the clock forward by d and fires the timers that fall due,
// in deadline order.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceLocked(d)
}

func (c *FakeClock) advanceLocked(d time.Duration) {
	if d > 0 {
		c.now = c.now.Add(d)
	}
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- t.at
			if t.sleeping {
				t.sleeping = false
				c.setSleepersLocked(c.sleepers - 1)
			}
			continue
		}
		kept = append(kept, t)
	}
	c.timers = kept
}

func (c *FakeClock) removeLocked(t *timer) {
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return
		}
	}
}

func (c *FakeClock) setSleepersLocked(n int) {
	c.sleepers = n
	close(c.changed)
	c.changed = make(chan struct{})
}

// BlockUntil waits until at least n goroutines are blocked in Sleep (manual
// mode), or ctx is done. A Sleep whose deadline an Advance passed no
// longer counts, even before its goroutine runs again.
func (c *FakeClock) BlockUntil(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		if c.sleepers >= n {
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}
