package modules

import (
	"strings"
	"testing"
)

// TestPkgRepositoryOnLabHost: the lab's own repository, added by
// core.pkg.repository as a deb822 file instead of the host's sources.list,
// makes its packages installable; the index is refreshed when the file is
// written and not again; core.pkg.installed with update_cache and
// cache_valid_time installs from it without refreshing a fresh index.
func TestPkgRepositoryOnLabHost(t *testing.T) {
	h := host(t)
	const src = "/etc/apt/sources.list.d/soul-lab.sources"
	const stampFile = "/var/lib/apt/periodic/update-success-stamp"
	sh(t, h, "mkdir -p /srv/m; mv /etc/apt/sources.list /etc/apt/sources.list.soulbak; rm -f "+src+" "+stampFile+
		"; apt-get purge -y -q hello >/dev/null 2>&1; apt-get update -q >/dev/null 2>&1; true")
	t.Cleanup(func() {
		sh(t, h, "rm -f "+src+"; mv /etc/apt/sources.list.soulbak /etc/apt/sources.list; apt-get purge -y -q hello >/dev/null 2>&1; apt-get update -q >/dev/null 2>&1; true")
	})
	if got := sh(t, h, "apt-cache policy hello | grep Candidate || true"); strings.Contains(got, "Candidate: 2") {
		t.Fatalf("hello is known without the repository: %q", got)
	}
	repo := `{name: t, module: core.pkg.repository, params: {name: soul-lab, uris: ["file:/srv/lab-repo"], suites: ["./"], trusted: true}}`
	converge(t, h, "/srv/m/repo", repo, src)
	if got := sh(t, h, "cat "+src); !strings.Contains(got, "URIs: file:/srv/lab-repo\nSuites: ./\nTrusted: yes\n") {
		t.Fatalf("sources file:\n%s", got)
	}
	if got := sh(t, h, "apt-cache policy hello | grep Candidate"); strings.Contains(got, "(none)") {
		t.Fatalf("the index was not refreshed after the repository was added: %q", got)
	}
	// converge's second apply left the stamp of the one refresh alone.
	stamp1 := stamp(t, h, stampFile)
	if stamp1 == "none\n" {
		t.Fatal("no refresh stamp after the repository was added")
	}
	install := `{name: t, module: core.pkg.installed, params: {name: hello, update_cache: true, cache_valid_time: 3600}}`
	converge(t, h, "/srv/m/inst", install, "/usr/bin/hello")
	if got := sh(t, h, "hello"); !strings.Contains(got, "Hello, world!") {
		t.Fatalf("hello: %q", got)
	}
	if now := stamp(t, h, stampFile); now != stamp1 {
		t.Fatalf("a fresh index (cache_valid_time 3600) was refreshed: %s -> %s", stamp1, now)
	}
	// Without cache_valid_time, update_cache refreshes; it is not a change.
	if r := apply(t, h, "/srv/m/inst2", `  - {name: t, module: core.pkg.installed, params: {name: hello, update_cache: true}}`+"\n", false); r.Failed || r.Changed {
		t.Fatalf("update_cache on an installed package: %+v", r)
	}
	if now := stamp(t, h, stampFile); now == stamp1 {
		t.Fatal("update_cache without cache_valid_time did not refresh")
	}
	wantRefused(t, h, "/srv/m/repo-bad", `{name: t, module: core.pkg.repository, params: {name: bad, uris: ["https://x"], suites: [bookworm], components: [main], signed_by: "not a key"}}`, "core.pkg.repository", "signed_by")
	converge(t, h, "/srv/m/repo-rm", `{name: t, module: core.pkg.repository, params: {name: soul-lab, state: absent}}`)
}
