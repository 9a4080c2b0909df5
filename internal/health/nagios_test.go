package health

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
)

// TestInterpret pins the Nagios plugin convention and the faults that make
// a check UNKNOWN (SPEC §14.1).
func TestInterpret(t *testing.T) {
	exec := Check{Incarnation: "i", Name: "c", Module: "core.exec.run", Timeout: 5e9}
	wait := Check{Incarnation: "i", Name: "w", Module: "core.wait.http", Timeout: 5e9}
	tests := []struct {
		name   string
		c      Check
		r      domain.Result
		ctxErr error
		want   Outcome
	}{
		{"ok with perfdata", exec, domain.Result{RC: 0, Stdout: "PING OK - 0.1 ms | rta=0.1ms;1;2;0 'pkt loss'=0%;5;10\nmore"},
			nil, Outcome{Status: OK, Message: "PING OK - 0.1 ms", Perfdata: map[string]float64{"rta": 0.1, "pkt loss": 0}}},
		{"warning", exec, domain.Result{RC: 1, Failed: true, Stdout: "DISK WARNING - 85% used"}, nil, Outcome{Status: Warning, Message: "DISK WARNING - 85% used"}},
		{"critical", exec, domain.Result{RC: 2, Failed: true, Stdout: "redis: connection refused"}, nil, Outcome{Status: Critical, Message: "redis: connection refused"}},
		{"unknown", exec, domain.Result{RC: 3, Failed: true, Stdout: "cannot tell"}, nil, Outcome{Status: Unknown, Message: "cannot tell"}},
		{"undefined exit code", exec, domain.Result{RC: 7, Failed: true, Stdout: "odd"}, nil,
			Outcome{Status: Unknown, Message: "check exited with rc 7, not a Nagios status (0-3): odd"}},
		{"missing program", exec, domain.Result{RC: 127, Failed: true, Msg: "starting /no/such: no such file or directory"}, nil,
			Outcome{Status: Unknown, Message: "check program not found or not executable (rc 127): starting /no/such: no such file or directory"}},
		{"binary output", exec, domain.Result{RC: 0, Stdout: "\x00\x01\xff\xfe"}, nil,
			Outcome{Status: Unknown, Message: "check printed binary output (4 bytes), not a Nagios status line"}},
		{"timed out", exec, domain.Result{RC: -1, Failed: true}, context.DeadlineExceeded,
			Outcome{Status: Unknown, Message: "check timed out after 5s"}},
		{"control characters cleaned", exec, domain.Result{RC: 0, Stdout: "OK\tall \x1b[31mgood"}, nil, Outcome{Status: OK, Message: "OK all  [31mgood"}},
		{"probe succeeded", wait, domain.Result{Msg: ""}, nil, Outcome{Status: OK}},
		{"probe failed", wait, domain.Result{Failed: true, Msg: "GET http://x: 503 after 3s\nmore"}, nil, Outcome{Status: Critical, Message: "GET http://x: 503 after 3s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Interpret(tc.c, tc.r, tc.ctxErr)
			tc.want.Incarnation, tc.want.Check = tc.c.Incarnation, tc.c.Name
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestMessageBounded: a huge first line is cut to MaxMessage bytes.
func TestMessageBounded(t *testing.T) {
	long := make([]byte, 1<<20)
	for i := range long {
		long[i] = 'x'
	}
	o := Interpret(Check{Module: "core.exec.run"}, domain.Result{RC: 2, Stdout: string(long)}, nil)
	if o.Status != Critical || len(o.Message) > MaxMessage+len("…") {
		t.Fatalf("status %s, message of %d bytes", o.Status, len(o.Message))
	}
}
