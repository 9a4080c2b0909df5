package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaiseInotifyInstances: a limit below what systemd hosts need is
// raised to minInotifyInstances, a higher one is left alone, and a limit
// that cannot be read is an error that says which.
func TestRaiseInotifyInstances(t *testing.T) {
	path := filepath.Join(t.TempDir(), "max_user_instances")
	for _, tc := range []struct{ was, want string }{
		{"128\n", "8192\n"},
		{"65536\n", "65536\n"},
		{"8192\n", "8192\n"},
	} {
		if err := os.WriteFile(path, []byte(tc.was), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := raiseInotifyInstances(path); err != nil {
			t.Fatalf("%q: %v", tc.was, err)
		}
		if got, _ := os.ReadFile(path); string(got) != tc.want {
			t.Errorf("limit %q became %q, want %q", tc.was, got, tc.want)
		}
	}
	if err := os.WriteFile(path, []byte("many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := raiseInotifyInstances(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("unreadable limit: %v", err)
	}
}
