package core

import (
	"github.com/soulstack/soulstack/internal/module"
	"strings"
	"testing"
)

const testArmored = `-----BEGIN PGP PUBLIC KEY BLOCK-----

mDMEZabc
=abcd
-----END PGP PUBLIC KEY BLOCK-----`

func TestAptRepoFile(t *testing.T) {
	m := aptManager{}
	got, err := m.repoFile(repoSpec{name: "app", uris: []string{"https://apt.example.com/debian"}, suites: []string{"bookworm"},
		components: []string{"main", "contrib"}, signedBy: testArmored + "\n", enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "# Managed by Soul Stack (core.pkg.repository app); local changes are overwritten.\n" +
		"Types: deb\nURIs: https://apt.example.com/debian\nSuites: bookworm\nComponents: main contrib\n" +
		"Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n mDMEZabc\n =abcd\n -----END PGP PUBLIC KEY BLOCK-----\n"
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if p := m.repoPath("app"); p != "/etc/apt/sources.list.d/app.sources" {
		t.Fatal(p)
	}
	flat, err := m.repoFile(repoSpec{name: "lab", uris: []string{"file:/srv/repo"}, suites: []string{"./"}, trusted: true, enabled: true})
	if err != nil || !strings.Contains(string(flat), "Suites: ./\nTrusted: yes\n") || strings.Contains(string(flat), "Components") {
		t.Fatalf("flat: %v\n%s", err, flat)
	}
	for _, c := range []struct {
		r     repoSpec
		param string
	}{
		{repoSpec{name: "a", suites: []string{"x"}, components: []string{"main"}}, "uris"},
		{repoSpec{name: "a", uris: []string{"https://x"}, components: []string{"main"}}, "suites"},
		{repoSpec{name: "a", uris: []string{"https://x"}, suites: []string{"bookworm"}}, "components"},
		{repoSpec{name: "a", uris: []string{"https://x"}, suites: []string{"./"}, components: []string{"main"}}, "components"},
		{repoSpec{name: "a", uris: []string{"https://x"}, suites: []string{"b"}, components: []string{"main"}, signedBy: "not a key"}, "signed_by"},
		{repoSpec{name: "a", uris: []string{"https://x y"}, suites: []string{"b"}, components: []string{"main"}}, "uris"},
		{repoSpec{name: "a", baseurl: "https://x"}, "baseurl"},
	} {
		_, err := m.repoFile(c.r)
		wantErrContains(t, err, `param "`+c.param+`"`)
	}
}

func TestDNFRepoFile(t *testing.T) {
	m := dnfManager{tool: "dnf"}
	got, err := m.repoFile(repoSpec{name: "app", baseurl: "https://rpm.example.com/el9/$basearch", gpgkey: "https://rpm.example.com/key.asc", enabled: true, gpgcheck: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "# Managed by Soul Stack (core.pkg.repository app); local changes are overwritten.\n[app]\nname=app\n" +
		"baseurl=https://rpm.example.com/el9/$basearch\nenabled=1\ngpgcheck=1\ngpgkey=https://rpm.example.com/key.asc\n"
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if p := m.repoPath("app"); p != "/etc/yum.repos.d/app.repo" {
		t.Fatal(p)
	}
	for _, c := range []struct {
		r     repoSpec
		param string
	}{
		{repoSpec{name: "a"}, "baseurl"},
		{repoSpec{name: "a", baseurl: "ftp://x"}, "baseurl"},
		{repoSpec{name: "a", baseurl: "https://x", gpgkey: "-----BEGIN"}, "gpgkey"},
		{repoSpec{name: "a", uris: []string{"https://x"}}, "uris"},
	} {
		_, err := m.repoFile(c.r)
		wantErrContains(t, err, `param "`+c.param+`"`)
	}
}

func TestPkgInstallOptions(t *testing.T) {
	env := &module.Env{Check: true}
	for _, c := range []struct {
		p     map[string]any
		param string
	}{
		{map[string]any{"cache_valid_time": int64(60)}, "cache_valid_time"},
		{map[string]any{"update_cache": true, "cache_valid_time": int64(-1)}, "cache_valid_time"},
		{map[string]any{"default_release": "bad release"}, "default_release"},
		{map[string]any{"enablerepo": []any{"a b"}}, "enablerepo"},
	} {
		_, _, err := pkgPrepare(t.Context(), newArgs(c.p), aptManager{}, env)
		wantErrContains(t, err, `param "`+c.param+`"`)
	}
	err := aptManager{}.install(t.Context(), []pkgSpec{{name: "x"}}, installOpts{enableRepo: []string{"epel"}})
	wantErrContains(t, err, `param "enablerepo"`, "dnf option")
	err = dnfManager{tool: "dnf"}.install(t.Context(), []pkgSpec{{name: "x"}}, installOpts{defaultRelease: "bookworm-backports"})
	wantErrContains(t, err, `param "default_release"`, "apt option")
}

// TestDnfExclude: exclude: becomes dnf's --exclude, once per pattern,
// before the packages (unit-tested only: the lab has no dnf host).
func TestDnfExclude(t *testing.T) {
	o, _, err := pkgPrepare(t.Context(), newArgs(map[string]any{"exclude": []any{"kernel*", "nginx-1.20"}, "enablerepo": []any{"epel"}}), dnfManager{tool: "dnf"}, &module.Env{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(dnfInstallArgv("dnf", []pkgSpec{{name: "nginx"}, {name: "redis", version: "7.0.15-1.el9"}}, o), " ")
	if want := "dnf install -y -q --enablerepo=epel --exclude=kernel* --exclude=nginx-1.20 nginx redis-7.0.15-1.el9"; got != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	_, _, err = pkgPrepare(t.Context(), newArgs(map[string]any{"exclude": []any{"a b"}}), dnfManager{tool: "dnf"}, &module.Env{Check: true})
	wantErrContains(t, err, `param "exclude"`)
	err = aptManager{}.install(t.Context(), []pkgSpec{{name: "x"}}, installOpts{exclude: []string{"kernel*"}})
	wantErrContains(t, err, `param "exclude"`, "dnf option")
}
