package install_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/install"
)

// The .deb packages carry the static binaries, the units (the soul's with
// KillMode=process and Restart=always), the default configs as conffiles
// that an upgrade never overwrites, the maintainer scripts and the
// license; the .rpm says the same through rpm -qip/-qlp.
func TestPackages(t *testing.T) {
	for _, tool := range []string{"dpkg-deb", "rpm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (scripts/test-deps.sh installs it)", tool)
		}
	}
	out := t.TempDir()
	ver := run(t, repoDir, "sh", "scripts/version.sh")
	// Every .deb, and the soul's .rpm (the keeper's is the same code path
	// and would only add compression time).
	// The layout of make dist: <dist>/linux-<arch>/{keeper,soul,soulctl}.
	if err := os.Symlink(binDir, filepath.Join(out, "linux-"+runtime.GOARCH)); err != nil {
		t.Fatal(err)
	}
	mkpackage := func(args ...string) []string {
		return strings.Fields(run(t, repoDir, bins["mkpackage"], append([]string{"-version", ver, "-dist", out,
			"-arch", runtime.GOARCH, "-license", filepath.Join(repoDir, "LICENSE")}, args...)...))
	}
	paths := mkpackage("-format", "deb")
	paths = append(paths, mkpackage("-format", "rpm", "-packages", install.PkgSoul)...)
	if len(paths) != 4 {
		t.Fatalf("built %v, want 3 .deb and 1 .rpm", paths)
	}
	debs := map[string]string{}
	for _, p := range paths {
		if strings.HasSuffix(p, ".deb") {
			debs[run(t, "", "dpkg-deb", "-f", p, "Package")] = p
		}
	}
	soulDeb := debs[install.PkgSoul]
	if soulDeb == "" || debs[install.PkgKeeper] == "" || debs[install.PkgSoulctl] == "" {
		t.Fatalf("debs: %v", debs)
	}
	if got := run(t, "", "dpkg-deb", "-f", soulDeb, "Architecture"); got != runtime.GOARCH {
		t.Errorf("Architecture %q", got)
	}
	if got := run(t, "", "dpkg-deb", "-f", soulDeb, "Version"); !strings.Contains(got, strings.TrimPrefix(strings.SplitN(ver, "-", 2)[0], "v")) {
		t.Errorf("Version %q does not carry %s", got, ver)
	}

	// Contents and modes, as dpkg would unpack them.
	root := t.TempDir()
	run(t, "", "dpkg-deb", "-x", soulDeb, root)
	want := map[string]os.FileMode{"usr/bin/soul": 0o755, "etc/soulstack/soul.env": 0o600, "usr/lib/systemd/system/soulstack-soul.service": 0o644, "usr/share/doc/soulstack-soul/copyright": 0o644}
	for p, mode := range want {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Errorf("soul package: %v", err)
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), mode)
		}
	}
	if err := install.CheckStatic(filepath.Join(root, "usr/bin/soul"), 0); err != nil {
		t.Error(err)
	}
	unit := readFile(t, filepath.Join(root, "usr/lib/systemd/system/soulstack-soul.service"))
	for _, line := range []string{"KillMode=process", "Restart=always", "ExecStart=/usr/bin/soul run", "EnvironmentFile=/etc/soulstack/soul.env"} {
		if !strings.Contains(unit, "\n"+line) {
			t.Errorf("soul unit lacks %q:\n%s", line, unit)
		}
	}
	if env := readFile(t, filepath.Join(root, "etc/soulstack/soul.env")); !strings.Contains(env, "\nSOULSTACK_KEEPER=\n") {
		t.Errorf("the default soul.env names a Keeper:\n%s", env)
	}
	if lic := readFile(t, filepath.Join(root, "usr/share/doc/soulstack-soul/copyright")); !strings.Contains(lic, "Apache License") {
		t.Error("no Apache license in the package")
	}
	ctrl := t.TempDir()
	run(t, "", "dpkg-deb", "-e", soulDeb, ctrl)
	if c := readFile(t, filepath.Join(ctrl, "conffiles")); !strings.Contains(c, "/etc/soulstack/soul.env") {
		t.Errorf("conffiles = %q", c)
	}
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		if _, err := os.Stat(filepath.Join(ctrl, s)); err != nil {
			t.Errorf("soul package has no %s", s)
		}
	}

	// The keeper package: hardened unit, config readable by its user's
	// group, the soul binary it serves, the user created before unpacking.
	kroot := t.TempDir()
	run(t, "", "dpkg-deb", "-x", debs[install.PkgKeeper], kroot)
	if err := install.CheckStatic(filepath.Join(kroot, "usr/lib/soulstack/soul-linux-"+runtime.GOARCH), 0); err != nil {
		t.Error(err)
	}
	kunit := readFile(t, filepath.Join(kroot, "usr/lib/systemd/system/soulstack-keeper.service"))
	for _, line := range []string{"User=soulstack", "NoNewPrivileges=yes", "ProtectSystem=strict", "ExecStart=/usr/bin/keeper serve"} {
		if !strings.Contains(kunit, "\n"+line) {
			t.Errorf("keeper unit lacks %q", line)
		}
	}
	listing := run(t, "", "dpkg-deb", "-c", debs[install.PkgKeeper])
	if !strings.Contains(listing, "root/soulstack") || !strings.Contains(listing, "./etc/soulstack/keeper.yaml") {
		t.Errorf("keeper.yaml is not root:soulstack:\n%s", listing)
	}
	kctrl := t.TempDir()
	run(t, "", "dpkg-deb", "-e", debs[install.PkgKeeper], kctrl)
	if pre := readFile(t, filepath.Join(kctrl, "preinst")); !strings.Contains(pre, "useradd --system") {
		t.Errorf("keeper preinst:\n%s", pre)
	}

	// The rpm: metadata and file list.
	for _, p := range paths {
		if !strings.HasSuffix(p, ".rpm") || !strings.Contains(filepath.Base(p), install.PkgSoul) {
			continue
		}
		info := run(t, "", "rpm", "-qip", p)
		for _, s := range []string{"Name        : soulstack-soul", "License     : Apache-2.0"} {
			if !strings.Contains(info, s) {
				t.Errorf("rpm -qip lacks %q:\n%s", s, info)
			}
		}
		files := run(t, "", "rpm", "-qlp", p)
		for _, f := range []string{"/usr/bin/soul", "/etc/soulstack/soul.env", "/usr/lib/systemd/system/soulstack-soul.service"} {
			if !strings.Contains(files, f) {
				t.Errorf("rpm -qlp lacks %s:\n%s", f, files)
			}
		}
		if cfg := run(t, "", "rpm", "-qcp", p); !strings.Contains(cfg, "/etc/soulstack/soul.env") {
			t.Errorf("rpm config files: %q", cfg)
		}
		if scripts := run(t, "", "rpm", "-qp", "--scripts", p); !strings.Contains(scripts, "the soul is not started") {
			t.Errorf("rpm scripts:\n%s", scripts)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
