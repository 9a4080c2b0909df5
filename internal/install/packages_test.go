package install_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/install"
	"github.com/soulstack/soulstack/internal/testutil"
)

// `make package`, the README's command, builds the .deb and .rpm of the
// keeper, the soul and soulctl; the .deb packages carry the static
// binaries, the units (the soul's with KillMode=process and
// Restart=always), the default configs as conffiles that an upgrade never
// overwrites, the maintainer scripts and the license; each .rpm says the
// same through rpm -qip/-qlp.
func TestPackages(t *testing.T) {
	for _, tool := range []string{"make", "dpkg-deb", "rpm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (scripts/test-deps.sh installs it)", tool)
		}
	}
	blocks, err := testutil.ReadmeCommands(filepath.Join(repoDir, "docs", "deployment.md"), "<!-- install-check: begin", "<!-- install-check: end -->")
	if err != nil {
		t.Fatal(err)
	}
	cmd := testutil.FindCommands(blocks, "make package")
	if len(cmd) != 1 || cmd[0] != "make package" {
		t.Fatalf("README's package block: %q, want make package", cmd)
	}
	// Into a temporary dist/, for this machine's architecture only (the
	// other's binaries are built the same way, by the same command).
	out := t.TempDir()
	start := time.Now()
	run(t, repoDir, "sh", "-c", cmd[0]+" DIST="+out+" ARCHES="+runtime.GOARCH)
	t.Logf("%s in %v", cmd[0], time.Since(start).Round(time.Millisecond))
	ver := run(t, repoDir, "sh", "scripts/version.sh")
	var paths []string
	for _, ext := range []string{"deb", "rpm"} {
		m, _ := filepath.Glob(filepath.Join(out, "*."+ext))
		paths = append(paths, m...)
	}
	if len(paths) != 6 {
		t.Fatalf("make package built %v, want 3 .deb and 3 .rpm", paths)
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
	if lic := readFile(t, filepath.Join(root, "usr/share/doc/soulstack-soul/copyright")); !strings.Contains(lic, "Apache License") || !strings.Contains(lic, "/usr/share/common-licenses/Apache-2.0") {
		t.Error("the copyright file does not name the Apache license in common-licenses")
	}
	for _, p := range []string{"usr/share/man/man8/soul.8.gz", "usr/share/man/man8/soul-run.8.gz", "usr/share/doc/soulstack-soul/changelog.Debian.gz",
		"usr/share/bash-completion/completions/soul", "usr/share/zsh/vendor-completions/_soul", "usr/share/fish/vendor_completions.d/soul.fish"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("soul package: %v", err)
		}
	}

	// lintian, as a Debian user would run it: no error and no warning
	// beyond the overrides the packages ship (each with its reason).
	if _, err := exec.LookPath("lintian"); err != nil {
		t.Fatal("lintian is needed (scripts/test-deps.sh installs it)")
	}
	var debPaths []string
	for _, p := range debs {
		debPaths = append(debPaths, p)
	}
	lout, _ := exec.Command("lintian", append([]string{"--no-cfg"}, debPaths...)...).CombinedOutput()
	for _, l := range strings.Split(string(lout), "\n") {
		if strings.HasPrefix(l, "E: ") || strings.HasPrefix(l, "W: ") {
			t.Errorf("lintian: %s", l)
		}
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

	// Each rpm: metadata, file list, config files, scripts.
	rpms := map[string][]string{
		install.PkgSoul:    {"/usr/bin/soul", "/etc/soulstack/soul.env", "/usr/lib/systemd/system/soulstack-soul.service"},
		install.PkgKeeper:  {"/usr/bin/keeper", "/etc/soulstack/keeper.yaml", "/usr/lib/systemd/system/soulstack-keeper.service", "/usr/lib/soulstack/soul-linux-" + runtime.GOARCH},
		install.PkgSoulctl: {"/usr/bin/soulctl"},
	}
	for _, p := range paths {
		if !strings.HasSuffix(p, ".rpm") {
			continue
		}
		info := run(t, "", "rpm", "-qip", p)
		name := ""
		for _, l := range strings.Split(info, "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "Name" {
				name = strings.TrimSpace(v)
			}
		}
		want, ok := rpms[name]
		if !ok {
			t.Errorf("%s: rpm -qip names %q:\n%s", p, name, info)
			continue
		}
		delete(rpms, name)
		if !strings.Contains(info, "License     : Apache-2.0") || !strings.Contains(info, "Architecture: "+map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]) {
			t.Errorf("rpm -qip %s:\n%s", name, info)
		}
		files := run(t, "", "rpm", "-qlp", p)
		for _, f := range want {
			if !strings.Contains(files, f) {
				t.Errorf("rpm -qlp %s lacks %s:\n%s", name, f, files)
			}
		}
		if name == install.PkgSoulctl {
			continue
		}
		if cfg := run(t, "", "rpm", "-qcp", p); !strings.Contains(cfg, want[1]) {
			t.Errorf("rpm config files of %s: %q", name, cfg)
		}
		scripts := run(t, "", "rpm", "-qp", "--scripts", p)
		if name == install.PkgSoul && !strings.Contains(scripts, "the soul is not started") || name == install.PkgKeeper && !strings.Contains(scripts, "useradd --system") {
			t.Errorf("rpm scripts of %s:\n%s", name, scripts)
		}
	}
	if len(rpms) > 0 {
		t.Errorf("no rpm of %v", rpms)
	}

	// rpmlint, as an RPM user would run it: no error and no warning beyond
	// packaging/rpmlint.toml (each filter and setting with its reason).
	var rpmPaths []string
	for _, p := range paths {
		if strings.HasSuffix(p, ".rpm") {
			rpmPaths = append(rpmPaths, p)
			// The man pages are %doc (rpmlint: not-listed-as-documentation).
			if d := run(t, "", "rpm", "-qdp", p); !strings.Contains(d, "/usr/share/man/man") {
				t.Errorf("%s: no man page among its documentation: %q", p, d)
			}
		}
	}
	checkRpmlint(t, rpmPaths)
	checkAptRepo(t, out)
}

// checkRpmlint runs rpmlint with packaging/rpmlint.toml on the .rpm files
// and fails on any error or warning it prints. nfpm (rpmpack) names the
// cpio payload's members with absolute paths, which rpm installs right but
// which Debian's rpmlint unpacks with `rpm2cpio | cpio -id` into / instead
// of its scratch directory (and then finds no binary to check): the cpio
// it runs is made to keep names relative (--no-absolute-filenames).
func checkRpmlint(t *testing.T, rpms []string) {
	t.Helper()
	for _, tool := range []string{"rpmlint", "cpio"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (scripts/test-deps.sh installs it)", tool)
		}
	}
	if len(rpms) == 0 {
		t.Fatal("no .rpm to lint")
	}
	cpio, _ := exec.LookPath("cpio")
	shim := t.TempDir()
	if err := os.WriteFile(filepath.Join(shim, "cpio"), []byte("#!/bin/sh\nexec "+cpio+" --no-absolute-filenames \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("rpmlint", append([]string{"-c", filepath.Join(repoDir, "packaging", "rpmlint.toml")}, rpms...)...)
	cmd.Env = append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("rpmlint: %v", err)
	}
	summary := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, ": E: ") || strings.Contains(l, ": W: ") {
			t.Errorf("rpmlint: %s", l)
		}
		if strings.Contains(l, "packages and") {
			summary = l
		}
	}
	if !strings.Contains(summary, fmt.Sprintf("%d packages", len(rpms))) || !strings.Contains(summary, " 0 errors, 0 warnings") {
		t.Errorf("rpmlint summary %q, want %d packages with 0 errors, 0 warnings:\n%s", summary, len(rpms), out)
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
