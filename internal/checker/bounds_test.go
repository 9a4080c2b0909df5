package checker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestL3AttemptBoundsAtLoad reproduces audit finding L3: a procedure with
// `attempts: {max: 20000, interval: 0}` (or max 1e9) loaded and spun,
// writing a step-log row per attempt. Such procedures are now refused at
// load with the line; a fast poll needs the explicit fast-poll: true, and
// an omitted interval is the 0.1 s floor.
func TestL3AttemptBoundsAtLoad(t *testing.T) {
	for _, tc := range []struct {
		name, attempts, want string
	}{
		{"max 20000 interval 0", "{max: 20000, interval: 0}", "p:18:25: step s condition 1 attempts.max is 20000: at most 1000 attempts"},
		{"max 1e9", "{max: 1000000000, interval: 1}", "attempts.max is 1000000000: at most 1000"},
		{"min above the cap", "{min: 5000, max: 6000, interval: 1}", "attempts.min is 5000"},
		{"interval 0", "{max: 10, interval: 0}", "p:18:39: step s condition 1 attempts.interval 0 is below 100ms: write a longer interval, or fast-poll: true"},
		{"interval 0.05", "{max: 10, interval: 0.05}", "attempts.interval 0.05 is below 100ms"},
		{"fast-poll not a boolean", "{max: 10, interval: 0, fast-poll: yes please}", "fast-poll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(base, "        on-error:", "        attempts: "+tc.attempts+"\n        on-error:", 1)
			_, err := ParseProcedure("p", []byte(src))
			var ve *ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a ValidationError containing %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		attempts string
		max      int
		interval time.Duration
	}{
		{"{max: 1000, interval: 0.1}", 1000, 100 * time.Millisecond},
		{"{max: 10, interval: 0, fast-poll: true}", 10, 0},
		{"{max: 10, interval: 0.01, fast-poll: true}", 10, 10 * time.Millisecond},
		{"{max: 5}", 5, MinInterval},
	} {
		src := strings.Replace(base, "        on-error:", "        attempts: "+tc.attempts+"\n        on-error:", 1)
		p, err := ParseProcedure("p", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", tc.attempts, err)
		}
		a := p.Steps[0].Conditions[0].Attempts
		if a.Max != tc.max || a.Interval != tc.interval {
			t.Errorf("%s: attempts %+v, want max %d interval %s", tc.attempts, a, tc.max, tc.interval)
		}
	}
}

// TestL3DefaultTaskTimeout: a procedure with no config.timeout used to run
// until cancelled; it now ends TIMEOUT after the Keeper's default (1 h
// unless configured).
func TestL3DefaultTaskTimeout(t *testing.T) {
	noTimeout := strings.Replace(neverHolds, "config:\n  timeout: 300\n", "", 1)
	e := newEnv(t, Config{})
	e.put("forever", noTimeout)
	task := e.execWait("forever", nil)
	if task.Status != StatusTimeout || task.RunError != "task timed out after 1h0m0s" {
		t.Fatalf("status %s run_error %q, want TIMEOUT after 1h\n%s", task.Status, task.RunError, dumpLog(task))
	}
	if got := task.FinishedAt.Sub(*task.StartedAt); got != DefaultTaskTimeout {
		t.Errorf("ran %s on the fake clock, want %s", got, DefaultTaskTimeout)
	}
	e = newEnv(t, Config{DefaultTimeout: 90 * time.Second})
	e.put("forever", noTimeout)
	if task := e.execWait("forever", nil); task.Status != StatusTimeout || task.RunError != "task timed out after 1m30s" {
		t.Fatalf("configured default: status %s run_error %q", task.Status, task.RunError)
	}
}
