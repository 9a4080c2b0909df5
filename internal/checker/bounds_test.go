package checker

import (
	"errors"
	"fmt"
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

// floodProcedure is audit finding N6's procedure: 20 steps, each polling
// a list of 5 commands up to 1000 times with no interval, skipping on.
// Each condition is within attempts.max; the task as a whole wrote
// 100,110 step-log rows.
func floodProcedure() string {
	var b strings.Builder
	b.WriteString("steps:\n")
	for i := range 20 {
		fmt.Fprintf(&b, "  s%d:\n    conditions:\n      - apicall: [\"souls list\", \"souls list\", \"souls list\", \"souls list\", \"souls list\"]\n", i)
		b.WriteString("        expect:\n          - {filter: \"length(@)\", op: \"==\", value: 0}\n")
		b.WriteString("        attempts: {max: 1000, interval: 0, fast-poll: true}\n")
		b.WriteString("        on-error:\n          - {error-type: AttemptsLimitReached, handler: _continue}\n")
	}
	return b.String()
}

// TestN6TaskWorkBounded reproduces audit finding N6: one task's total
// work (steps × attempts × commands per apicall) and its step-log rows
// are bounded, and reaching a bound fails the task with a clear error
// naming the config key. The bounds are settable; their defaults are
// documented constants.
func TestN6TaskWorkBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		want    string
		maxRows int
	}{
		{"work", Config{MaxTaskWork: 1000}, "bound of 1000 units of work", 1000*2 + 50},
		{"log rows", Config{MaxTaskLogRows: 300}, "bound of 300 step-log rows", 300 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.cfg)
			e.put("flood", floodProcedure())
			task := e.execWait("flood", nil)
			if task.Status != StatusFailure || !strings.Contains(task.RunError, tc.want) || !strings.Contains(task.RunError, "checker.max_task_") {
				t.Fatalf("status %s run_error %q, want FAILURE with %q", task.Status, task.RunError, tc.want)
			}
			if n := len(task.Log); n > tc.maxRows || n < 100 {
				t.Fatalf("%d step-log rows, want at most %d", n, tc.maxRows)
			}
		})
	}
	if DefaultMaxTaskWork >= 20*1000*5 || DefaultMaxTaskLogRows >= 100000 {
		t.Fatalf("the default bounds (%d work, %d rows) let N6's procedure run whole", DefaultMaxTaskWork, DefaultMaxTaskLogRows)
	}
}
