package modules

import (
	"strings"
	"testing"
)

// TestPkgIndexRefreshedOnLabHost: core.pkg.index_refreshed with no package
// (Ansible's apt update_cache: true alone) runs apt-get update and reports
// it; check mode does not; cache_valid_time skips a refresh of an index
// younger than it.
func TestPkgIndexRefreshedOnLabHost(t *testing.T) {
	h := host(t)
	const stampFile = "/var/lib/apt/periodic/update-success-stamp"
	sh(t, h, "rm -f "+stampFile+"; mkdir -p /srv/ir")
	t.Cleanup(func() { sh(t, h, "apt-get update -q >/dev/null") })
	// The stamp is written only after apt-get update succeeded.
	stampOf := func() string {
		return strings.TrimSpace(sh(t, h, "stat -c %y "+stampFile+" 2>/dev/null || echo none"))
	}
	r := apply(t, h, "/srv/ir/check", "  - {name: t, module: core.pkg.index_refreshed, params: {cache_valid_time: 3600}}\n", true)
	if r.Failed || !r.Changed {
		t.Fatalf("check mode: %+v", r)
	}
	if s := stampOf(); s != "none" {
		t.Fatalf("check mode refreshed the index (stamp %s)", s)
	}
	r = apply(t, h, "/srv/ir/run", "  - {name: t, module: core.pkg.index_refreshed, params: {cache_valid_time: 3600}}\n", false)
	if r.Failed || !r.Changed {
		t.Fatalf("refresh: %+v", r)
	}
	first := stampOf()
	if first == "none" {
		t.Fatal("the refresh left no stamp")
	}
	r = apply(t, h, "/srv/ir/valid", "  - {name: t, module: core.pkg.index_refreshed, params: {cache_valid_time: 3600}}\n", false)
	if r.Failed || r.Changed {
		t.Fatalf("a refresh within cache_valid_time: %+v", r)
	}
	if s := stampOf(); s != first {
		t.Fatalf("a skipped refresh moved the stamp: %s -> %s", first, s)
	}
	r = apply(t, h, "/srv/ir/always", "  - {name: t, module: core.pkg.index_refreshed}\n", false)
	if r.Failed || !r.Changed {
		t.Fatalf("a refresh without cache_valid_time: %+v", r)
	}
	if s := stampOf(); s == first {
		t.Fatal("a refresh without cache_valid_time did not run apt-get update")
	}
}
