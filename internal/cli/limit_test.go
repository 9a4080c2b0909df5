package cli

import (
	"strings"
	"testing"
)

// A --limit the Keeper would refuse is a usage error (exit 2) before any
// request, not silently dropped (the Keeper's default listed, exit 0).
func TestLimitOutOfRange(t *testing.T) {
	for _, args := range [][]string{
		{"audit", "list", "--limit", "-1"},
		{"audit", "list", "--limit", "0"},
		{"audit", "list", "--limit", "10001"},
		{"run", "list", "--limit", "-5"},
		{"incarnation", "history", "web", "--limit", "-1"},
		{"checker", "task", "list", "--limit", "-1"},
		{"checker", "task", "list", "--limit", "1001"},
	} {
		code, out, errOut := runSoulctl(t, append(args, "--keeper", "https://127.0.0.1:1")...)
		if code != 2 || !strings.Contains(errOut, "--limit must be a number from 1 to") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 naming --limit", strings.Join(args, " "), code, out, errOut)
		}
	}
}
