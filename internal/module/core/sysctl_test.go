package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

// TestSysctlLogic runs the sysctl code path against a fake /proc/sys and
// sysctl.d in a temporary directory, so it runs without root.
func TestSysctlLogic(t *testing.T) {
	base := t.TempDir()
	dirs := sysctlDirs{proc: filepath.Join(base, "proc"), conf: filepath.Join(base, "sysctl.d")}
	key := filepath.Join(dirs.proc, "net/ipv4/ip_local_port_range")
	if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("32768\t60999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dirs.conf, "60-soulstack-net.ipv4.ip_local_port_range.conf")
	apply := func(p map[string]any, env *module.Env) (res, live string, changed bool) {
		t.Helper()
		r, err := sysctlApply(dirs, p, env)
		if err != nil || r.Failed {
			t.Fatalf("sysctl %v: %v %s", p, err, r.Msg)
		}
		b, _ := os.ReadFile(key)
		return r.Diff, string(b), r.Changed
	}

	// Same value with other whitespace, not persisted: converged.
	if _, _, changed := apply(map[string]any{"name": "net.ipv4.ip_local_port_range", "value": "32768 60999", "persist": false}, &module.Env{}); changed {
		t.Fatal("whitespace-only difference reported as a change")
	}
	// Persisting an already live value changes only the file.
	diff, _, changed := apply(map[string]any{"name": "net.ipv4.ip_local_port_range", "value": "32768 60999"}, &module.Env{Check: true})
	if !changed || !strings.Contains(diff, "+net.ipv4.ip_local_port_range = 32768 60999") {
		t.Fatalf("check diff %q", diff)
	}
	if _, err := os.Stat(conf); !os.IsNotExist(err) {
		t.Fatal("check mode wrote the persisted file")
	}
	params := map[string]any{"name": "net.ipv4.ip_local_port_range", "value": "1024 65000"}
	diff, live, changed := apply(params, &module.Env{})
	if !changed || live != "1024 65000" || !strings.Contains(diff, "32768 60999 -> 1024 65000") {
		t.Fatalf("apply: changed %v live %q diff %q", changed, live, diff)
	}
	if got := readFile(t, conf); got != "net.ipv4.ip_local_port_range = 1024 65000\n" {
		t.Fatalf("persisted %q", got)
	}
	before := snap(t, conf)
	if _, _, changed := apply(params, &module.Env{}); changed {
		t.Fatal("second apply changed")
	}
	before.untouched(t, conf)

	_, err := sysctlApply(dirs, map[string]any{"name": "net.no.such", "value": 1}, &module.Env{})
	wantErrContains(t, err, "does not exist on this kernel")
	_, err = sysctlApply(dirs, map[string]any{"name": "../../etc/passwd", "value": 1}, &module.Env{})
	wantErrContains(t, err, "not a valid sysctl name")
}

// TestSysctlReal changes a harmless kernel value for real and restores it.
func TestSysctlReal(t *testing.T) {
	needRoot(t)
	const name, path = "kernel.msgmnb", "/proc/sys/kernel/msgmnb"
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no %s on this kernel: %v", path, err)
	}
	conf := "/etc/sysctl.d/60-soulstack-kernel.msgmnb.conf"
	if _, err := os.Stat(conf); err == nil {
		t.Fatalf("%s exists already; refusing to clobber it", conf)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(path, orig, 0)
		_ = os.Remove(conf)
	})
	want := "16385"
	if strings.TrimSpace(string(orig)) == want {
		want = "16386"
	}
	params := map[string]any{"name": name, "value": want}
	res := run(t, "core.sysctl.present", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if got := strings.TrimSpace(readFile(t, path)); got != strings.TrimSpace(string(orig)) {
		t.Fatalf("check mode changed the live value to %s", got)
	}
	wantChanged(t, run(t, "core.sysctl.present", params, nil), true)
	if got := strings.TrimSpace(readFile(t, path)); got != want {
		t.Fatalf("live value %s, want %s", got, want)
	}
	before := snap(t, conf)
	wantChanged(t, run(t, "core.sysctl.present", params, nil), false)
	before.untouched(t, conf)
	_, err = runErr(t, "core.sysctl.present", params, &module.Env{Root: t.TempDir()})
	wantErrContains(t, err, "cannot be confined")
}

// TestSysctlFile persists into a shared file as Ansible's sysctl_file does:
// the wanted outputs are what ansible.posix.sysctl (ansible-core 2.14,
// reload and sysctl_set off) wrote from the same input file.
func TestSysctlFile(t *testing.T) {
	const in = "# hardening\n\nvm.swappiness = 10\n; old\nvm.swappiness=20\nnet.ipv4.ip_forward = 0\nkernel.msgmax   =   65536  \nnot a key line\n"
	for _, c := range []struct{ name, value, want string }{
		{"net.ipv4.ip_forward", "1", "# hardening\n\nvm.swappiness=10\n; old\nnet.ipv4.ip_forward=1\nkernel.msgmax=65536\nnot a key line\n"},
		{"net.core.somaxconn", "1024", "# hardening\n\nvm.swappiness=10\n; old\nnet.ipv4.ip_forward=0\nkernel.msgmax=65536\nnot a key line\nnet.core.somaxconn=1024\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dirs := sysctlDirs{proc: filepath.Join(base, "proc"), conf: filepath.Join(base, "sysctl.d")}
			key := filepath.Join(dirs.proc, sysctlKeyPath(c.name))
			if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(key, []byte(c.value+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(base, "99-hardening.conf")
			if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
				t.Fatal(err)
			}
			p := map[string]any{"name": c.name, "value": c.value, "file": file}
			r, err := sysctlApply(dirs, p, &module.Env{})
			if err != nil || r.Failed || !r.Changed {
				t.Fatalf("first run: %v %+v", err, r)
			}
			if got, _ := os.ReadFile(file); string(got) != c.want {
				t.Errorf("file:\n%s\nwant (Ansible's):\n%s", got, c.want)
			}
			if _, err := os.Stat(dirs.conf); err == nil {
				t.Error("the default sysctl.d file was written too")
			}
			if r, err := sysctlApply(dirs, p, &module.Env{}); err != nil || r.Changed {
				t.Errorf("second run: changed=%v err=%v", r.Changed, err)
			}
		})
	}
	if _, err := sysctlApply(sysctlDirs{}, map[string]any{"name": "a.b", "value": "1", "file": "rel.conf"}, &module.Env{}); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("a relative file: %v", err)
	}
}
