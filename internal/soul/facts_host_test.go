package soul

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCollectFactsSecondSet(t *testing.T) {
	facts, err := CollectFacts(FactsOptions{SID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if facts["memory_mb"] != facts["memory"].(map[string]any)["total_mb"] || facts["memory_mb"].(int64) < 16 {
		t.Errorf("memory_mb = %v, memory = %v", facts["memory_mb"], facts["memory"])
	}
	if facts["cpus"] != facts["cpu"].(map[string]any)["count"] || facts["cpus"].(int64) < 1 {
		t.Errorf("cpus = %v, cpu = %v", facts["cpus"], facts["cpu"])
	}
	if v, _ := facts["virtualization"].(string); v == "" {
		t.Errorf("virtualization is empty")
	}
	osf := facts["os"].(map[string]any)
	if osf["distribution"] == "" || osf["distribution"] != osf["name"] {
		t.Errorf("os.distribution = %v (name %v)", osf["distribution"], osf["name"])
	}
	mounts := facts["mounts"].([]any)
	root := false
	for _, m := range mounts {
		mm := m.(map[string]any)
		if pseudoFS[mm["fstype"].(string)] {
			t.Errorf("pseudo filesystem in mounts: %v", mm)
		}
		root = root || mm["path"] == "/"
	}
	if !root {
		t.Errorf("mounts lack /: %v", mounts)
	}
}

func TestParseMounts(t *testing.T) {
	in := "sysfs /sys sysfs rw,nosuid 0 0\n" +
		"/dev/sda1 / ext4 rw,relatime 0 0\n" +
		"proc /proc proc rw 0 0\n" +
		"/dev/sdb1 /srv/my\\040data xfs ro 0 0\n" +
		"short line\n"
	got := parseMounts(strings.NewReader(in))
	want := []any{
		map[string]any{"path": "/", "device": "/dev/sda1", "fstype": "ext4", "options": []any{"rw", "relatime"}},
		map[string]any{"path": "/srv/my data", "device": "/dev/sdb1", "fstype": "xfs", "options": []any{"ro"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parseMounts (-want +got):\n%s", d)
	}
	var many strings.Builder
	for i := 0; i < maxMountFacts+10; i++ {
		many.WriteString("tmpfs /m tmpfs rw 0 0\n")
	}
	if n := len(parseMounts(strings.NewReader(many.String()))); n != maxMountFacts {
		t.Errorf("mounts not bounded: %d", n)
	}
	if got := unescapeMount(`a\\b\0`); got != `a\\b\0` {
		t.Errorf("unescapeMount kept a short escape wrong: %q", got)
	}
}

func TestDetectVirt(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"bare metal", map[string]string{"/sys/class/dmi/id/sys_vendor": "Dell Inc.\n", "/proc/cpuinfo": "flags\t: fpu vme\n"}, "none"},
		{"nspawn", map[string]string{"/run/systemd/container": "systemd-nspawn\n"}, "systemd-nspawn"},
		{"docker", map[string]string{"/.dockerenv": ""}, "docker"},
		{"podman", map[string]string{"/run/.containerenv": ""}, "podman"},
		{"lxc env", map[string]string{"/proc/1/environ": "PATH=/bin\x00container=lxc\x00"}, "lxc"},
		{"kvm", map[string]string{"/sys/class/dmi/id/sys_vendor": "QEMU\n", "/sys/class/dmi/id/product_name": "Standard PC (Q35 + ICH9, 2009)\n", "/sys/class/dmi/id/bios_vendor": "SeaBIOS\n"}, "qemu"},
		{"vmware", map[string]string{"/sys/class/dmi/id/sys_vendor": "VMware, Inc.\n"}, "vmware"},
		{"unknown hypervisor", map[string]string{"/proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu hypervisor sse\n"}, "vm"},
	}
	for _, c := range cases {
		read := func(p string) ([]byte, error) {
			if s, ok := c.files[p]; ok {
				return []byte(s), nil
			}
			return nil, os.ErrNotExist
		}
		exists := func(p string) bool { _, err := read(p); return !errors.Is(err, os.ErrNotExist) }
		if got := detectVirt(read, exists); got != c.want {
			t.Errorf("%s: detectVirt = %q, want %q", c.name, got, c.want)
		}
	}
}
