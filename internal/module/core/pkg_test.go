package core

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

// testPkg is a tiny Debian package with no dependencies beyond libc and
// ncurses, which nothing else on a test host needs.
const testPkg = "sl"

// pkgMu serializes the tests that install or remove testPkg, so they can
// run in parallel with the rest of the suite but not with each other.
var pkgMu sync.Mutex

func needAPT(t *testing.T) {
	t.Helper()
	needRoot(t)
	if _, err := exec.LookPath("apt-get"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs on Debian and must have apt-get")
		}
		t.Skip("needs apt-get (a Debian host); CI runs it")
	}
}

func dpkgState(t *testing.T, name string) pkgState {
	t.Helper()
	st, err := aptManager{}.query(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// restorePkg puts testPkg back the way the test found it.
func restorePkg(t *testing.T) {
	t.Helper()
	wasInstalled := dpkgState(t, testPkg).installed
	t.Cleanup(func() {
		if st := dpkgState(t, testPkg); st.installed == wasInstalled && !st.config {
			return
		}
		verb := "purge"
		if wasInstalled {
			verb = "install"
		}
		cmd := exec.Command("apt-get", verb, "-y", "-q", testPkg)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("restoring %s: %v\n%s", testPkg, err, out)
		}
	})
	if wasInstalled {
		wantChanged(t, run(t, "core.pkg.removed", map[string]any{"name": testPkg, "purge": true}, nil), true)
	}
}

func TestPkgInstallAndRemove(t *testing.T) {
	needAPT(t)
	t.Parallel()
	lockUntilCleanup(t, &pkgMu)
	restorePkg(t)
	env := &module.Env{Facts: map[string]any{"os": map[string]any{"family": "debian"}}}
	checkEnv := &module.Env{Check: true, Facts: env.Facts}
	status := "/var/lib/dpkg/status"

	wantChanged(t, run(t, "core.pkg.removed", map[string]any{"name": testPkg}, env), false)

	res := run(t, "core.pkg.installed", map[string]any{"name": testPkg}, checkEnv)
	wantChanged(t, res, true)
	if !strings.HasPrefix(res.Diff, "+ "+testPkg+" ") || res.Msg != "would install "+testPkg {
		t.Errorf("check result diff %q msg %q", res.Diff, res.Msg)
	}
	if dpkgState(t, testPkg).installed {
		t.Fatal("check mode installed the package")
	}

	res = run(t, "core.pkg.installed", map[string]any{"name": testPkg}, env)
	wantChanged(t, res, true)
	st := dpkgState(t, testPkg)
	if !st.installed || st.version == "" {
		t.Fatalf("%s not installed after apply: %+v", testPkg, st)
	}
	if diff := cmp.Diff(map[string]any{"installed": map[string]any{testPkg: st.version}, "cache_refreshed": false}, res.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}

	// Converged: no apt-get run, the dpkg database untouched.
	before := snap(t, status)
	for _, p := range []map[string]any{
		{"name": testPkg},
		{"names": []any{testPkg}},
		{"name": testPkg, "version": st.version},
	} {
		res = run(t, "core.pkg.installed", p, env)
		wantChanged(t, res, false)
		if diff := cmp.Diff(map[string]any{"installed": map[string]any{testPkg: st.version}, "cache_refreshed": false}, res.Data); diff != "" {
			t.Errorf("converged data (-want +got):\n%s", diff)
		}
	}
	before.untouched(t, status)

	// An older version is a downgrade, refused without allow_downgrade.
	_, err := runErr(t, "core.pkg.installed", map[string]any{"name": testPkg, "version": "0.1-soulstack"}, checkEnv)
	wantErrContains(t, err, `param "allow_downgrade"`, testPkg+" "+st.version+" is installed")
	// A different version is a change that check mode reports.
	res = run(t, "core.pkg.installed", map[string]any{"name": testPkg, "version": "0.1-soulstack", "allow_downgrade": true}, checkEnv)
	wantChanged(t, res, true)
	if res.Diff != "~ "+testPkg+" "+st.version+" -> 0.1-soulstack\n" {
		t.Errorf("version diff %q", res.Diff)
	}
	before.untouched(t, status)

	res = run(t, "core.pkg.removed", map[string]any{"name": testPkg}, checkEnv)
	wantChanged(t, res, true)
	if !dpkgState(t, testPkg).installed {
		t.Fatal("check mode removed the package")
	}
	wantChanged(t, run(t, "core.pkg.removed", map[string]any{"name": testPkg}, env), true)
	if dpkgState(t, testPkg).installed {
		t.Fatal("package still installed after removal")
	}
	before = snap(t, status)
	wantChanged(t, run(t, "core.pkg.removed", map[string]any{"name": testPkg}, env), false)
	before.untouched(t, status)
}

func TestPkgErrors(t *testing.T) {
	needAPT(t)
	t.Parallel()
	lockUntilCleanup(t, &pkgMu)
	tests := []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"unknown package", map[string]any{"name": "soulstack-no-such-package"}, []string{"package soulstack-no-such-package", "not found in the configured apt sources"}},
		{"unknown version", map[string]any{"name": testPkg, "version": "0.0.1-soulstack"}, []string{"version 0.0.1-soulstack of package " + testPkg, "not found in the configured apt sources"}},
		{"option injection", map[string]any{"name": "--purge"}, []string{"not a valid package name"}},
		{"version with names", map[string]any{"names": []any{"a", "b"}, "version": "1"}, []string{"version pins a single package"}},
		{"nothing named", map[string]any{"names": []any{}}, []string{"at least one package"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restorePkg(t)
			_, err := runErr(t, "core.pkg.installed", tt.params, nil)
			wantErrContains(t, err, tt.want...)
			if dpkgState(t, testPkg).installed {
				t.Errorf("a failed install left %s installed", testPkg)
			}
		})
	}
}

func TestParseDpkgStatus(t *testing.T) {
	tests := []struct {
		out  string
		want pkgState
	}{
		{"install ok installed 5.02-1+b1\n", pkgState{installed: true, version: "5.02-1+b1"}},
		{"deinstall ok config-files 1.0\n", pkgState{config: true}},
		{"install ok unpacked 1.0\n", pkgState{}},
		{"deinstall ok not-installed \ninstall ok installed 2.0\n", pkgState{installed: true, version: "2.0"}},
	}
	for _, tt := range tests {
		if got := parseDpkgStatus(tt.out); got != tt.want {
			t.Errorf("parseDpkgStatus(%q) = %+v, want %+v", tt.out, got, tt.want)
		}
	}
}

func TestAptNotFound(t *testing.T) {
	stderr := "E: Unable to locate package foo\nE: Version '9' for 'bar' was not found\nE: Package 'baz' has no installation candidate\n"
	want := "package foo, package baz (no installation candidate), version 9 of package bar"
	if got := aptNotFound(stderr); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := aptNotFound("E: dpkg was interrupted"); got != "" {
		t.Errorf("unrelated error classified as not found: %q", got)
	}
}

func TestDNFMatches(t *testing.T) {
	m := dnfManager{tool: "dnf"}
	for _, tt := range []struct {
		installed, want string
		ok              bool
	}{
		{"7.0.15-1.el9", "7.0.15", true},
		{"7.0.15-1.el9", "7.0.15-1.el9", true},
		{"7.0.15-1.el9", "1:7.0.15-1.el9", true},
		{"7.0.15-1.el9", "7.0.1", false},
	} {
		if got := m.matches(tt.installed, tt.want); got != tt.ok {
			t.Errorf("matches(%q, %q) = %v", tt.installed, tt.want, got)
		}
	}
}

func TestPickManager(t *testing.T) {
	for fam, want := range map[string]string{"debian": "apt-get", "redhat": "dnf"} {
		m, err := pickManager(&module.Env{Facts: map[string]any{"os": map[string]any{"family": fam}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.name(); got != want && !(fam == "redhat" && got == "yum") {
			t.Errorf("family %s: manager %s, want %s", fam, got, want)
		}
	}
	if got := factString(map[string]any{"os.family": "debian"}, "os.family"); got != "debian" {
		t.Errorf("flat fact lookup = %q", got)
	}
}
