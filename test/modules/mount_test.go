package modules

import (
	"strings"
	"testing"
)

// TestMountOnLabHost: a tmpfs gets its fstab entry and is mounted; a second
// run changes nothing; changed options remount it; absent unmounts it and
// removes the entry; an unknown type is refused before fstab is touched.
func TestMountOnLabHost(t *testing.T) {
	h := host(t)
	const mp = "/srv/m/scratch"
	sh(t, h, "mkdir -p /srv/m; touch /etc/fstab; cp /etc/fstab /etc/fstab.soulbak")
	t.Cleanup(func() { sh(t, h, "umount "+mp+" 2>/dev/null; mv /etc/fstab.soulbak /etc/fstab") })
	task := func(size string) string {
		return `{name: t, module: core.mount.mounted, params: {path: ` + mp + `, src: tmpfs, fstype: tmpfs, opts: "size=` + size + `,mode=0755"}}`
	}
	converge(t, h, "/srv/m/mnt", task("8m"), "/etc/fstab")
	if got := sh(t, h, "findmnt -n -o FSTYPE,OPTIONS "+mp+"; grep "+mp+" /etc/fstab"); !strings.HasPrefix(got, "tmpfs ") || !strings.Contains(got, "size=8192k") ||
		!strings.HasSuffix(got, "tmpfs "+mp+" tmpfs size=8m,mode=0755 0 0\n") {
		t.Fatalf("after mount: %q", got)
	}
	if r := apply(t, h, "/srv/m/mnt2", "  - "+task("16m")+"\n", false); r.Failed || !r.Changed || !strings.Contains(r.Msg, "remounted") {
		t.Fatalf("new options: %+v", r)
	}
	if got := sh(t, h, "findmnt -n -o OPTIONS "+mp); !strings.Contains(got, "size=16384k") {
		t.Fatalf("not remounted: %q", got)
	}
	before := stamp(t, h, "/etc/fstab")
	wantRefused(t, h, "/srv/m/mnt-bad", `{name: t, module: core.mount.mounted, params: {path: /srv/m/x, src: /dev/null, fstype: "${ 'nosuchfs' }"}}`, "core.mount.mounted", "fstype")
	if now := stamp(t, h, "/etc/fstab"); now != before {
		t.Fatal("a refused mount touched /etc/fstab")
	}
	converge(t, h, "/srv/m/mnt-rm", `{name: t, module: core.mount.mounted, params: {path: `+mp+`, state: absent}}`, "/etc/fstab")
	if got := sh(t, h, "findmnt -n "+mp+" || true; grep -c scratch /etc/fstab || true"); got != "0\n" {
		t.Fatalf("after absent: %q", got)
	}
}
