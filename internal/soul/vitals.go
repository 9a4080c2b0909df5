package soul

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultVitalsInterval is how often a soul reports its vital signs.
const DefaultVitalsInterval = time.Minute

// CollectVitals reads the host's volatile facts (SPEC §14.1): load
// averages, memory and root disk use, uptime and, on a systemd host, the
// failed units. root is the soul's --root ("" = /); a confined soul
// reports the disk under its root. Values that cannot be read are left
// out, never guessed.
func CollectVitals(ctx context.Context, root string) map[string]any {
	v := map[string]any{}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		for i, k := range []string{"load1", "load5", "load15"} {
			if i < len(f) {
				if x, err := strconv.ParseFloat(f[i], 64); err == nil {
					v[k] = x
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/uptime"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if x, err := strconv.ParseFloat(f[0], 64); err == nil {
				v["uptime_s"] = int64(x)
			}
		}
	}
	if mem := meminfo(); mem["MemTotal"] > 0 {
		total, avail := mem["MemTotal"]*1024, mem["MemAvailable"]*1024
		v["mem_total_bytes"] = total
		v["mem_used_bytes"] = total - avail
		v["mem_used_pct"] = pct(total-avail, total)
	}
	dir := root
	if dir == "" {
		dir = "/"
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Clean(dir), &st); err == nil && st.Blocks > 0 {
		total := int64(st.Blocks) * st.Bsize
		free := int64(st.Bavail) * st.Bsize
		v["disk_total_bytes"] = total
		v["disk_used_bytes"] = total - free
		v["disk_used_pct"] = pct(total-free, total)
	}
	if root == "" && SystemdBooted() {
		v["failed_units"] = failedUnits(ctx)
	}
	return v
}

func pct(part, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(int64(float64(part)*1000/float64(total))) / 10
}

// meminfo reads /proc/meminfo in KiB.
func meminfo() map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) > 0 {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}

// failedUnits lists the units systemd reports failed (empty when none or
// when systemctl cannot answer within 5 s).
func failedUnits(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", "list-units", "--state=failed", "--no-legend", "--plain", "--no-pager").Output()
	units := []string{}
	if err != nil {
		return units
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			units = append(units, f[0])
		}
	}
	return units
}
