package keepercmd

import (
	"errors"
	"math"
	"runtime/debug"
	"slices"
	"testing"
)

// restoreGC puts the process's collector settings back after a test.
func restoreGC(t *testing.T) {
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	debug.SetGCPercent(percent)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

// TestApplyGCDefaults: without GOGC/GOMEMLIMIT in the environment the
// keeper runs with GOGC=200 and a soft limit of 3/4 of the memory it may
// use; a variable the environment sets (which the runtime applied at
// start) is left as it is.
func TestApplyGCDefaults(t *testing.T) {
	restoreGC(t)
	avail := memoryAvailable()
	if avail == 0 {
		t.Fatal("memoryAvailable: 0 (neither the cgroup's memory.max nor sysinfo could be read)")
	}
	noEnv := func(string) string { return "" }
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	s := ApplyGCDefaults(noEnv)
	if s.GCPercent != DefaultGCPercent || s.MemoryLimit != int64(float64(avail)*0.75) || len(s.FromEnv) != 0 {
		t.Errorf("defaults: %+v, want GOGC %d and limit %d (3/4 of %d)", s, DefaultGCPercent, int64(float64(avail)*0.75), avail)
	}
	if got := debug.SetGCPercent(DefaultGCPercent); got != DefaultGCPercent {
		t.Errorf("GOGC in effect: %d, want %d", got, DefaultGCPercent)
	}

	// What the runtime set from GOGC=150 and GOMEMLIMIT=1GiB stays.
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(1 << 30)
	env := map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}
	s = ApplyGCDefaults(func(k string) string { return env[k] })
	if s.GCPercent != 150 || s.MemoryLimit != 1<<30 || !slices.Equal(s.FromEnv, []string{"GOGC", "GOMEMLIMIT"}) {
		t.Errorf("from the environment: %+v, want GOGC 150, limit 1 GiB, both from the environment", s)
	}
	if want := "GOGC=150, memory limit 1024 MiB (environment: GOGC, GOMEMLIMIT)"; s.String() != want {
		t.Errorf("String() = %q, want %q", s, want)
	}

	// GOMEMLIMIT=off (the runtime's "no limit") stays off; GOGC gets
	// the keeper's default.
	debug.SetMemoryLimit(math.MaxInt64)
	env = map[string]string{"GOMEMLIMIT": "off"}
	s = ApplyGCDefaults(func(k string) string { return env[k] })
	if s.GCPercent != DefaultGCPercent || s.MemoryLimit != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT=off: %+v, want GOGC %d and no limit", s, DefaultGCPercent)
	}
	if want := "GOGC=200, memory limit none (environment: GOMEMLIMIT)"; s.String() != want {
		t.Errorf("String() = %q, want %q", s, want)
	}
}

func TestParseCgroupMemoryMax(t *testing.T) {
	files := map[string]string{
		"/system.slice/keeper.service": "2147483648\n",
		"/user.slice":                  "max\n",
		"":                             "max\n",
	}
	read := func(p string) ([]byte, error) {
		if v, ok := files[p]; ok {
			return []byte(v), nil
		}
		return nil, errors.New("no such file")
	}
	for _, tc := range []struct {
		cgroups string
		want    uint64
	}{
		{"0::/system.slice/keeper.service\n", 2 << 30},
		{"12:memory:/x\n0::/system.slice/keeper.service/\n", 2 << 30},
		{"0::/user.slice\n", 0},
		{"0::/\n", 0},
		{"0::/gone\n", 0},
		{"12:memory:/docker/abc\n", 0}, // cgroup v1 only
		{"", 0},
	} {
		if got := parseCgroupMemoryMax(tc.cgroups, read); got != tc.want {
			t.Errorf("parseCgroupMemoryMax(%q) = %d, want %d", tc.cgroups, got, tc.want)
		}
	}
}
