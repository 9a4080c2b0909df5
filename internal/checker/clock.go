package checker

import (
	"context"
	"time"
)

// Clock is the Checker's time source. Every wait of the Checker (attempt
// intervals, dependency polling, the whole-task timeout, schedule ticks)
// goes through it, so tests can run procedures whose intervals are minutes
// in no time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep blocks for d or until ctx is done, returning ctx's error in the
	// latter case.
	Sleep(ctx context.Context, d time.Duration) error
	// After returns a channel that receives the time once d has passed. It
	// is a passive timer: unlike Sleep it never makes a fake clock advance.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits on a real timer.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// After is time.After.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
