package soul

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// maxMountFacts bounds the mounts fact: a container host with thousands of
// bind mounts must not blow up the soulprint.
const maxMountFacts = 256

// pseudoFS are kernel pseudo filesystems left out of the mounts fact:
// nothing a service configures lives on them.
var pseudoFS = map[string]bool{
	"proc": true, "sysfs": true, "cgroup": true, "cgroup2": true, "devpts": true,
	"mqueue": true, "debugfs": true, "tracefs": true, "securityfs": true,
	"pstore": true, "bpf": true, "configfs": true, "fusectl": true,
	"hugetlbfs": true, "autofs": true, "binfmt_misc": true, "devtmpfs": true,
	"nsfs": true, "efivarfs": true, "rpc_pipefs": true, "selinuxfs": true,
	"ramfs": true,
}

// mountFacts lists this host's mounted filesystems from /proc/self/mounts
// (pseudo filesystems left out), each {path, device, fstype, options}.
func mountFacts() []any {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return []any{}
	}
	defer f.Close()
	return parseMounts(f)
}

func parseMounts(r io.Reader) []any {
	out := []any{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() && len(out) < maxMountFacts {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || pseudoFS[fs[2]] {
			continue
		}
		opts := []any{}
		for _, o := range strings.Split(fs[3], ",") {
			opts = append(opts, o)
		}
		out = append(out, map[string]any{
			"path":    unescapeMount(fs[1]),
			"device":  unescapeMount(fs[0]),
			"fstype":  fs[2],
			"options": opts,
		})
	}
	return out
}

// unescapeMount decodes the octal escapes (\040 for a space) the kernel
// writes in /proc/self/mounts.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// virtualization names the platform this host runs on, read from files
// only: a container ("docker", "podman", "lxc", "systemd-nspawn",
// "container"), else a hypervisor from DMI ("kvm", "qemu", "vmware",
// "virtualbox", "xen", "hyperv", "amazon", "google", "vm"), else "none".
func virtualization() string {
	return detectVirt(os.ReadFile, func(p string) bool { _, err := os.Stat(p); return err == nil })
}

func detectVirt(read func(string) ([]byte, error), exists func(string) bool) string {
	if b, err := read("/run/systemd/container"); err == nil {
		if v := strings.TrimSpace(string(b)); v != "" {
			return v
		}
	}
	if exists("/.dockerenv") {
		return "docker"
	}
	if exists("/run/.containerenv") {
		return "podman"
	}
	if b, err := read("/proc/1/environ"); err == nil {
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, "container="); ok && v != "" {
				return v
			}
		}
	}
	if b, err := read("/proc/1/cgroup"); err == nil {
		s := string(b)
		switch {
		case strings.Contains(s, "/docker/"):
			return "docker"
		case strings.Contains(s, "/lxc/"):
			return "lxc"
		}
	}
	dmi := ""
	for _, p := range []string{"/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name", "/sys/class/dmi/id/bios_vendor"} {
		if b, err := read(p); err == nil {
			dmi += " " + strings.ToLower(strings.TrimSpace(string(b)))
		}
	}
	for _, m := range []struct{ needle, name string }{
		{"kvm", "kvm"}, {"qemu", "qemu"}, {"vmware", "vmware"}, {"virtualbox", "virtualbox"},
		{"innotek", "virtualbox"}, {"xen", "xen"}, {"microsoft corporation", "hyperv"},
		{"amazon ec2", "amazon"}, {"google", "google"}, {"bochs", "bochs"},
		{"parallels", "parallels"},
	} {
		if strings.Contains(dmi, m.needle) {
			return m.name
		}
	}
	if b, err := read("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
				for _, fl := range strings.Fields(v) {
					if fl == "hypervisor" {
						return "vm"
					}
				}
				break
			}
		}
	}
	return "none"
}
