package modules

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/lab"
)

// toyScript builds the toy packages of the apt tests on the host with
// dpkg-deb: soultoy 1.0.0 and 1.0.1; soultoy-lib 1.0; soultoy-needs 1.0
// (depends on soultoy-lib) and 2.0 (conflicts with it); soultoy-rec 1.0
// (recommends soultoy-lib); soultoy-alt 1.0 (conflicts with soultoy);
// soultoy-app 1.0
// and 1.1 (depend on hello, from the lab's repository), kept out of the
// repository as bare files for deb:. The repository is flat and has no
// Release file, so apt only takes its packages as unauthenticated.
const toyScript = `set -e
rm -rf /srv/toy; mkdir -p /srv/toy/repo /srv/toy/files
mk() { # name version dir [depends] [conflicts] [recommends]
	d=$(mktemp -d); mkdir -p "$d/DEBIAN" "$d/usr/share/$1"
	echo "$2" > "$d/usr/share/$1/version"
	{
		echo "Package: $1"; echo "Version: $2"; echo "Architecture: all"
		echo "Maintainer: Soul Stack tests <tests@example.invalid>"
		if [ -n "$4" ]; then echo "Depends: $4"; fi
		if [ -n "$5" ]; then echo "Conflicts: $5"; fi
		if [ -n "$6" ]; then echo "Recommends: $6"; fi
		echo "Description: toy package of the apt tests"
	} > "$d/DEBIAN/control"
	dpkg-deb --build --root-owner-group "$d" "/srv/toy/$3/$1_$2_all.deb" >/dev/null
	rm -rf "$d"
}
mk soultoy 1.0.0 repo; mk soultoy 1.0.1 repo
mk soultoy-lib 1.0 repo
mk soultoy-needs 1.0 repo soultoy-lib; mk soultoy-needs 2.0 repo "" soultoy-lib
mk soultoy-rec 1.0 repo "" "" soultoy-lib
mk soultoy-alt 1.0 repo "" soultoy
mk soultoy-app 1.0 files hello; mk soultoy-app 1.1 files hello
cd /srv/toy/repo
for f in *.deb; do
	dpkg-deb -f "$f"
	echo "Filename: ./$f"; echo "Size: $(stat -c %s "$f")"; echo "SHA256: $(sha256sum "$f" | cut -d' ' -f1)"; echo
done > Packages
echo 'deb [allow-insecure=yes] file:/srv/toy/repo ./' > /etc/apt/sources.list.d/soultoy.list
apt-get update -q >/dev/null 2>&1
`

// toyPackages are every package the apt tests install.
const toyPackages = "soultoy soultoy-lib soultoy-needs soultoy-rec soultoy-alt soultoy-app hello"

// toyRepo builds the toy packages and their repository on the host, with
// nothing of them installed; the cleanup removes them all.
func toyRepo(t *testing.T, h *lab.Host) {
	t.Helper()
	purge := "apt-mark unhold soultoy >/dev/null 2>&1; dpkg --purge " + toyPackages + " >/dev/null 2>&1; true"
	sh(t, h, purge+"\n"+toyScript)
	t.Cleanup(func() {
		sh(t, h, purge+"; rm -rf /srv/toy /etc/apt/sources.list.d/soultoy.list; apt-get update -q >/dev/null 2>&1; true")
	})
}

// pkgVersion is the installed version of pkg on the host, "" when none.
func pkgVersion(t *testing.T, h *lab.Host, pkg string) string {
	t.Helper()
	out := sh(t, h, "dpkg-query -W -f='${Status} ${Version}' "+pkg+" 2>/dev/null || true")
	if f := strings.Fields(out); len(f) == 4 && f[2] == "installed" {
		return f[3]
	}
	return ""
}

func wantVersion(t *testing.T, h *lab.Host, pkg, want string) {
	t.Helper()
	if got := pkgVersion(t, h, pkg); got != want {
		t.Fatalf("%s installed at %q, want %q", pkg, got, want)
	}
}

// wantFails runs task in check mode and for real and asserts both fail
// with a message holding each of wants, leaving dpkg's database alone.
func wantFails(t *testing.T, h *lab.Host, dir, task string, wants ...string) {
	t.Helper()
	wantFailsIn(t, h, []bool{true, false}, dir, task, wants...)
}

// wantFailsReal is wantFails for what apt only finds when it really runs
// (apt-get -s does not check authentication or holds): check mode says
// it would change.
func wantFailsReal(t *testing.T, h *lab.Host, dir, task string, wants ...string) {
	t.Helper()
	if r := apply(t, h, dir, "  - "+task+"\n", true); r.Failed || !r.Changed {
		t.Fatalf("%s in check mode: %+v", task, r)
	}
	wantFailsIn(t, h, []bool{false}, dir, task, wants...)
}

func wantFailsIn(t *testing.T, h *lab.Host, modes []bool, dir, task string, wants ...string) {
	t.Helper()
	before := stamp(t, h, dpkgStatus)
	for _, check := range modes {
		r := apply(t, h, dir, "  - "+task+"\n", check)
		if !r.Failed {
			t.Fatalf("%s (check %v) did not fail: %+v", task, check, r)
		}
		for _, w := range wants {
			if !strings.Contains(r.Msg, w) {
				t.Fatalf("%s (check %v): msg %q does not say %q", task, check, r.Msg, w)
			}
		}
	}
	if now := stamp(t, h, dpkgStatus); now != before {
		t.Fatalf("%s failed but changed the package database", task)
	}
}

const dpkgStatus = "/var/lib/dpkg/status"

// TestAptVersionLatestDowngradeOnLabHost: Ansible's apt repo.yml and
// downgrade.yml cases on toy packages from an unsigned repository.
func TestAptVersionLatestDowngradeOnLabHost(t *testing.T) {
	h := host(t)
	toyRepo(t, h)
	sh(t, h, "mkdir -p /srv/m")

	// An unsigned repository's package needs allow_unauthenticated.
	wantFailsReal(t, h, "/srv/m/apt-unauth", `{name: t, module: core.pkg.installed, params: {name: soultoy, version: 1.0.0}}`, "unauthenticated")
	wantVersion(t, h, "soultoy", "")
	converge(t, h, "/srv/m/apt-pin", `{name: t, module: core.pkg.installed, params: {name: soultoy, version: 1.0.0, allow_unauthenticated: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy", "1.0.0")

	// latest moves 1.0.0 to the candidate 1.0.1, then is converged.
	r := apply(t, h, "/srv/m/apt-latest", "  - {name: t, module: core.pkg.installed, params: {name: soultoy, latest: true, allow_unauthenticated: true}}\n", true)
	if r.Failed || !r.Changed || r.Diff != "~ soultoy 1.0.0 -> 1.0.1\n" {
		t.Fatalf("latest in check mode: %+v", r)
	}
	converge(t, h, "/srv/m/apt-latest", `{name: t, module: core.pkg.installed, params: {name: soultoy, latest: true, allow_unauthenticated: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy", "1.0.1")
	// Without latest an installed package is left at its version.
	if r := apply(t, h, "/srv/m/apt-present", "  - {name: t, module: core.pkg.installed, params: {name: soultoy}}\n", false); r.Failed || r.Changed {
		t.Fatalf("present on an installed package: %+v", r)
	}

	// Going back to 1.0.0 is a downgrade: refused without allow_downgrade.
	wantFails(t, h, "/srv/m/apt-down", `{name: t, module: core.pkg.installed, params: {name: soultoy, version: 1.0.0, allow_unauthenticated: true}}`, `param "allow_downgrade"`, "soultoy 1.0.1 is installed")
	wantVersion(t, h, "soultoy", "1.0.1")
	converge(t, h, "/srv/m/apt-down", `{name: t, module: core.pkg.installed, params: {name: soultoy, version: 1.0.0, allow_unauthenticated: true, allow_downgrade: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy", "1.0.0")

	// A held package is not upgraded unless allow_change_held_packages.
	sh(t, h, "apt-mark hold soultoy >/dev/null")
	wantFails(t, h, "/srv/m/apt-held", `{name: t, module: core.pkg.installed, params: {name: soultoy, latest: true, allow_unauthenticated: true}}`, "held")
	wantVersion(t, h, "soultoy", "1.0.0")
	converge(t, h, "/srv/m/apt-held", `{name: t, module: core.pkg.installed, params: {name: soultoy, latest: true, allow_unauthenticated: true, allow_change_held_packages: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy", "1.0.1")
	sh(t, h, "apt-mark unhold soultoy >/dev/null")

	// only_upgrade leaves a package that is not installed alone (Ansible
	// issue 30638) and upgrades the installed one.
	sh(t, h, "apt-get install -y -q --allow-unauthenticated --allow-downgrades soultoy=1.0.0 >/dev/null 2>&1")
	converge(t, h, "/srv/m/apt-only", `{name: t, module: core.pkg.installed, params: {names: [soultoy, soultoy-lib], latest: true, only_upgrade: true, allow_unauthenticated: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy", "1.0.1")
	wantVersion(t, h, "soultoy-lib", "")
	if r := apply(t, h, "/srv/m/apt-only2", "  - {name: t, module: core.pkg.installed, params: {name: soultoy-lib, only_upgrade: true, allow_unauthenticated: true}}\n", false); r.Failed || r.Changed {
		t.Fatalf("only_upgrade of a package that is not installed: %+v", r)
	}
	wantVersion(t, h, "soultoy-lib", "")

	// install_recommends: false leaves the recommended soultoy-lib out,
	// true brings it (Ansible's url-with-deps.yml, on a repository package).
	converge(t, h, "/srv/m/apt-norec", `{name: t, module: core.pkg.installed, params: {name: soultoy-rec, install_recommends: false, allow_unauthenticated: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy-rec", "1.0")
	wantVersion(t, h, "soultoy-lib", "")
	sh(t, h, "dpkg --purge soultoy-rec >/dev/null")
	r = apply(t, h, "/srv/m/apt-rec", "  - {name: t, module: core.pkg.installed, params: {name: soultoy-rec, install_recommends: true, allow_unauthenticated: true}}\n", false)
	if r.Failed || !r.Changed {
		t.Fatalf("install_recommends: true: %+v", r)
	}
	wantVersion(t, h, "soultoy-lib", "1.0")

	// soultoy-alt conflicts with the installed soultoy: fail_on_autoremove
	// refuses to remove it (Ansible's apt.yml hello-traditional case);
	// without it the diff says soultoy goes.
	wantVersion(t, h, "soultoy", "1.0.1")
	wantFails(t, h, "/srv/m/apt-conflict", `{name: t, module: core.pkg.installed, params: {name: soultoy-alt, allow_unauthenticated: true, fail_on_autoremove: true}}`, "remove")
	wantVersion(t, h, "soultoy", "1.0.1")
	alt := `{name: t, module: core.pkg.installed, params: {name: soultoy-alt, allow_unauthenticated: true}}`
	if r := apply(t, h, "/srv/m/apt-conflict", "  - "+alt+"\n", true); r.Failed || !r.Changed || r.Diff != "- soultoy 1.0.1\n+ soultoy-alt 1.0\n" {
		t.Fatalf("a conflicting install in check mode: %+v", r)
	}
	converge(t, h, "/srv/m/apt-conflict", alt, dpkgStatus)
	wantVersion(t, h, "soultoy", "")

	// Bad input: an unknown version, latest with version, a bad dpkg option.
	wantFailsReal(t, h, "/srv/m/apt-bad", `{name: t, module: core.pkg.installed, params: {name: soultoy-lib, version: "99", allow_unauthenticated: true}}`, "version 99 of package soultoy-lib", "not found")
	wantFails(t, h, "/srv/m/apt-bad", `{name: t, module: core.pkg.installed, params: {name: soultoy, latest: true, version: "1.0.0"}}`, `param "latest"`)
	wantFails(t, h, "/srv/m/apt-bad", `{name: t, module: core.pkg.installed, params: {name: soultoy, latest: true, allow_unauthenticated: true, default_release: nosuchrelease}}`, "nosuchrelease")
	wantRefused(t, h, "/srv/m/apt-bad2", `{name: t, module: core.pkg.installed, params: {name: soultoy, dpkg_options: "force-confold; rm -rf /"}}`, "core.pkg.installed", "dpkg_options")
	wantRefused(t, h, "/srv/m/apt-bad3", `{name: t, module: core.pkg.installed, params: {name: soultoy, dpkg_options: "${ 'force-confold,--bad option' }"}}`, "core.pkg.installed", "dpkg_options")

	// latest on an index that lost the toy repository: check mode does
	// not refresh and says the package is unknown; a real run refreshes
	// the index once and installs.
	sh(t, h, "dpkg --purge soultoy-lib >/dev/null; rm -f /var/lib/apt/lists/*srv_toy_repo*")
	latestLib := "  - {name: t, module: core.pkg.installed, params: {name: soultoy-lib, latest: true, allow_unauthenticated: true}}\n"
	if r := apply(t, h, "/srv/m/apt-stale", latestLib, true); !r.Failed || !strings.Contains(r.Msg, "package soultoy-lib") || !strings.Contains(r.Msg, "not found in the configured apt sources") {
		t.Fatalf("latest on a stale index in check mode: %+v", r)
	}
	if r := apply(t, h, "/srv/m/apt-stale", latestLib, false); r.Failed || !r.Changed {
		t.Fatalf("latest on a stale index: %+v", r)
	}
	wantVersion(t, h, "soultoy-lib", "1.0")
	if r := apply(t, h, "/srv/m/apt-stale", latestLib, false); r.Failed || r.Changed {
		t.Fatalf("latest again: %+v", r)
	}
}

// TestAptDebOnLabHost: deb: from a path and from a URL, its dependency
// pulled from the configured sources (Ansible's url-with-deps.yml), the
// version in the file deciding, the sha256 pin and downgrades.
func TestAptDebOnLabHost(t *testing.T) {
	h := host(t)
	toyRepo(t, h)
	sh(t, h, "mkdir -p /srv/m")
	const v10 = "/srv/toy/files/soultoy-app_1.0_all.deb"
	wantVersion(t, h, "hello", "")

	task := `{name: t, module: core.pkg.installed, params: {deb: ` + v10 + `}}`
	r := apply(t, h, "/srv/m/deb", "  - "+task+"\n", true)
	if r.Failed || !r.Changed || !strings.Contains(r.Diff, "+ soultoy-app 1.0\n") || !strings.Contains(r.Diff, "+ hello ") {
		t.Fatalf("deb in check mode: %+v", r)
	}
	converge(t, h, "/srv/m/deb", task, dpkgStatus)
	wantVersion(t, h, "soultoy-app", "1.0")
	if pkgVersion(t, h, "hello") == "" {
		t.Fatal("the .deb's dependency hello was not installed")
	}

	// 1.1 from a URL with its sha256 pinned; a wrong pin is refused.
	body, err := h.ReadFile("/srv/toy/files/soultoy-app_1.1_all.deb")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	pin := hex.EncodeToString(sum[:])
	ln, err := net.Listen("tcp", net.JoinHostPort(shared.Lab().GatewayIP(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/soultoy-app_1.1_all.deb" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	url := "http://" + ln.Addr().String() + "/soultoy-app_1.1_all.deb"
	wantFails(t, h, "/srv/m/deb-pin", `{name: t, module: core.pkg.installed, params: {deb: "`+url+`", sha256: "`+strings.Repeat("0", 64)+`"}}`, `param "sha256"`, pin)
	wantFails(t, h, "/srv/m/deb-404", `{name: t, module: core.pkg.installed, params: {deb: "`+url+`.missing"}}`, "404")
	// A password in the URL never reaches the result.
	secretURL := strings.Replace(url, "http://", "http://user:s3cr3t@", 1) + ".missing"
	if r := apply(t, h, "/srv/m/deb-secret", "  - {name: t, module: core.pkg.installed, params: {deb: \""+secretURL+"\"}}\n", false); !r.Failed || !strings.Contains(r.Msg, "404") || strings.Contains(r.Msg+r.Diff, "s3cr3t") {
		t.Fatalf("deb URL with a password: %+v", r)
	}
	converge(t, h, "/srv/m/deb-url", `{name: t, module: core.pkg.installed, params: {deb: "`+url+`", sha256: "`+pin+`"}}`, dpkgStatus)
	wantVersion(t, h, "soultoy-app", "1.1")

	// The older file is a downgrade.
	wantFails(t, h, "/srv/m/deb-down", task, `param "allow_downgrade"`, "soultoy-app 1.1 is installed")
	converge(t, h, "/srv/m/deb-down", `{name: t, module: core.pkg.installed, params: {deb: `+v10+`, allow_downgrade: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy-app", "1.0")

	// Bad input.
	wantRefused(t, h, "/srv/m/deb-bad", `{name: t, module: core.pkg.installed, params: {deb: "files/x.deb"}}`, "core.pkg.installed", "deb")
	wantRefused(t, h, "/srv/m/deb-bad2", `{name: t, module: core.pkg.installed, params: {deb: `+v10+`, sha256: "abc"}}`, "core.pkg.installed", "sha256")
	wantFails(t, h, "/srv/m/deb-bad3", `{name: t, module: core.pkg.installed, params: {deb: `+v10+`, name: soultoy-app}}`, `param "deb"`, "name")
	wantFails(t, h, "/srv/m/deb-bad4", `{name: t, module: core.pkg.installed, params: {deb: /etc/hostname}}`, `param "deb"`, "not a readable .deb")
	wantFails(t, h, "/srv/m/deb-bad5", `{name: t, module: core.pkg.installed, params: {deb: /srv/toy/nothing.deb}}`, `param "deb"`, "no such file")
}

// TestAptUpgradedOnLabHost: core.pkg.upgraded, Ansible's upgrade.yml and
// the autoremove cases of repo.yml: safe leaves a package that needs a
// removal, dist makes it, autoremove takes what nothing needs.
func TestAptUpgradedOnLabHost(t *testing.T) {
	h := host(t)
	toyRepo(t, h)
	sh(t, h, "mkdir -p /srv/m; apt-get install -y -q --allow-unauthenticated soultoy=1.0.0 soultoy-needs=1.0 >/dev/null 2>&1")
	wantVersion(t, h, "soultoy-lib", "1.0")

	wantFailsReal(t, h, "/srv/m/up-unauth", `{name: t, module: core.pkg.upgraded, params: {upgrade: safe}}`, "unauthenticated")
	r := apply(t, h, "/srv/m/up", "  - {name: t, module: core.pkg.upgraded, params: {upgrade: safe, allow_unauthenticated: true}}\n", true)
	if r.Failed || !r.Changed || r.Diff != "~ soultoy 1.0.0 -> 1.0.1\n" {
		t.Fatalf("safe upgrade in check mode: %+v", r)
	}
	converge(t, h, "/srv/m/up", `{name: t, module: core.pkg.upgraded, params: {upgrade: safe, allow_unauthenticated: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy", "1.0.1")
	wantVersion(t, h, "soultoy-needs", "1.0") // 2.0 conflicts with soultoy-lib: kept back

	// dist would remove soultoy-lib: fail_on_autoremove refuses that.
	wantFails(t, h, "/srv/m/up-noremove", `{name: t, module: core.pkg.upgraded, params: {upgrade: dist, allow_unauthenticated: true, fail_on_autoremove: true}}`, "remove")
	wantVersion(t, h, "soultoy-lib", "1.0")
	r = apply(t, h, "/srv/m/up-dist", "  - {name: t, module: core.pkg.upgraded, params: {upgrade: dist, allow_unauthenticated: true}}\n", true)
	if r.Failed || !r.Changed || r.Diff != "- soultoy-lib 1.0\n~ soultoy-needs 1.0 -> 2.0\n" {
		t.Fatalf("dist upgrade in check mode: %+v", r)
	}
	converge(t, h, "/srv/m/up-dist", `{name: t, module: core.pkg.upgraded, params: {upgrade: full, allow_unauthenticated: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy-needs", "2.0")
	wantVersion(t, h, "soultoy-lib", "")

	// autoremove: soultoy-lib installed as a dependency and no longer
	// needed goes (Ansible issue 26298).
	sh(t, h, "apt-get install -y -q --allow-unauthenticated --allow-downgrades soultoy-needs=1.0 >/dev/null 2>&1; apt-mark auto soultoy-lib >/dev/null")
	wantVersion(t, h, "soultoy-lib", "1.0")
	r = apply(t, h, "/srv/m/up-ar", "  - {name: t, module: core.pkg.removed, params: {name: soultoy-needs, autoremove: true}}\n", true)
	if r.Failed || !r.Changed || !strings.Contains(r.Diff, "- soultoy-lib 1.0\n") || !strings.Contains(r.Diff, "- soultoy-needs 1.0\n") {
		t.Fatalf("remove with autoremove in check mode: %+v", r)
	}
	converge(t, h, "/srv/m/up-ar", `{name: t, module: core.pkg.removed, params: {name: soultoy-needs, autoremove: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy-lib", "")
	sh(t, h, "apt-get install -y -q --allow-unauthenticated soultoy-needs=1.0 >/dev/null 2>&1; apt-mark auto soultoy-lib >/dev/null; apt-mark auto soultoy-needs >/dev/null")
	converge(t, h, "/srv/m/up-ar2", `{name: t, module: core.pkg.upgraded, params: {upgrade: "no", autoremove: true}}`, dpkgStatus)
	wantVersion(t, h, "soultoy-lib", "")
	wantVersion(t, h, "soultoy-needs", "")

	wantRefused(t, h, "/srv/m/up-bad", `{name: t, module: core.pkg.upgraded, params: {upgrade: sometimes}}`, "core.pkg.upgraded", "upgrade")
	wantRefused(t, h, "/srv/m/up-bad2", `{name: t, module: core.pkg.upgraded, params: {upgrade: "${ 'sometimes' }"}}`, "core.pkg.upgraded", "upgrade")
}
