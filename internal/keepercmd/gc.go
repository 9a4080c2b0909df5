package keepercmd

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
)

// DefaultGCPercent is the keeper's GOGC when its environment sets none:
// twice Go's 100. Measured with BenchmarkFanOut at 10,000 souls on a quiet
// machine (bench/results/2026-12-02/prep23-final*.txt): half the
// collections per run, the one-task fan-out ~20 % faster (0.9 s → 0.72 s)
// and the keeper's CPU per run ~17 % lower, for ~2.5 KiB more heap in use
// per connected soul and 5-20 KiB more RSS after runs; GOGC=400 was no
// faster and doubled the RSS after runs.
const DefaultGCPercent = 200

// memoryLimitShare is the keeper's soft memory limit (GOMEMLIMIT) when
// its environment sets none, as a share of the memory the process may use
// (its cgroup's memory.max, else the machine's RAM): a safety net for the
// extra headroom of DefaultGCPercent — near the limit the collector runs
// as often as it must, whatever GOGC says.
const memoryLimitShare = 0.75

// GCSettings is the keeper's garbage collector configuration, as
// ApplyGCDefaults left it.
type GCSettings struct {
	// GCPercent is GOGC in effect (-1: off).
	GCPercent int
	// MemoryLimit is the soft memory limit in bytes (math.MaxInt64: none).
	MemoryLimit int64
	// FromEnv names the variables the environment set (GOGC, GOMEMLIMIT),
	// which the runtime applied and ApplyGCDefaults left alone.
	FromEnv []string
}

// String is the settings as one log value.
func (s GCSettings) String() string {
	limit := "none"
	if s.MemoryLimit != math.MaxInt64 {
		limit = fmt.Sprintf("%d MiB", s.MemoryLimit>>20)
	}
	from := "keeper defaults"
	if len(s.FromEnv) > 0 {
		from = "environment: " + strings.Join(s.FromEnv, ", ")
	}
	gogc := strconv.Itoa(s.GCPercent)
	if s.GCPercent < 0 {
		gogc = "off"
	}
	return fmt.Sprintf("GOGC=%s, memory limit %s (%s)", gogc, limit, from)
}

// ApplyGCDefaults sets the keeper process's garbage collector to
// DefaultGCPercent and a soft memory limit of memoryLimitShare of the
// memory available, each only where the environment (getenv) does not
// set GOGC or GOMEMLIMIT: the runtime applied those already, and they
// stay the way to override the defaults (GOGC=100, GOMEMLIMIT=off).
// `keeper serve` calls it at start; the benchmarks' in-process keeper too.
func ApplyGCDefaults(getenv func(string) string) GCSettings {
	var s GCSettings
	if getenv("GOGC") != "" {
		s.FromEnv = append(s.FromEnv, "GOGC")
	} else {
		debug.SetGCPercent(DefaultGCPercent)
	}
	if getenv("GOMEMLIMIT") != "" {
		s.FromEnv = append(s.FromEnv, "GOMEMLIMIT")
	} else if limit := memoryLimit(memoryAvailable()); limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	m := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(m)
	s.GCPercent, s.MemoryLimit = int(m[0].Value.Uint64()), int64(m[1].Value.Uint64())
	return s
}

// memoryLimit is the default soft limit for avail bytes of memory (0:
// unknown, no limit).
func memoryLimit(avail uint64) int64 {
	if avail == 0 {
		return 0
	}
	return int64(float64(avail) * memoryLimitShare)
}

// memoryAvailable is the memory this process may use: its cgroup's
// memory.max when one is set (cgroup v2; systemd's MemoryMax=), else the
// machine's RAM; 0 when neither can be read.
func memoryAvailable() uint64 {
	var ram uint64
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		ram = uint64(si.Totalram) * uint64(si.Unit)
	}
	if max := cgroupMemoryMax(); max > 0 && (ram == 0 || max < ram) {
		return max
	}
	return ram
}

// cgroupMemoryMax reads memory.max of this process's cgroup v2 (0: none
// or unknown).
func cgroupMemoryMax() uint64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	return parseCgroupMemoryMax(string(b), func(path string) ([]byte, error) {
		return os.ReadFile("/sys/fs/cgroup" + path + "/memory.max")
	})
}

// parseCgroupMemoryMax finds the cgroup v2 entry ("0::/path") of a
// /proc/self/cgroup listing and reads that group's memory.max with read
// ("max" or unreadable: 0).
func parseCgroupMemoryMax(cgroups string, read func(path string) ([]byte, error)) uint64 {
	for _, line := range strings.Split(cgroups, "\n") {
		path, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		b, err := read(strings.TrimSuffix(path, "/"))
		if err != nil {
			return 0
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0 // "max"
		}
		return n
	}
	return 0
}
