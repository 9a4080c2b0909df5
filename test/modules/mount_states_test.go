package modules

import (
	"strings"
	"testing"
)

// TestMountEphemeralOnLabHost: state ephemeral mounts a tmpfs without
// touching fstab (check mode first, then a second run changes nothing);
// new options remount it, still without fstab; a mount of another source
// at the path is an error, not replaced; a bind mount converges too.
func TestMountEphemeralOnLabHost(t *testing.T) {
	h := host(t)
	const mp, bmp = "/srv/me/tmp", "/srv/me/bind"
	sh(t, h, "mkdir -p /srv/me/bsrc; echo hi > /srv/me/bsrc/f; touch /etc/fstab; cp /etc/fstab /etc/fstab.soulbak-e")
	t.Cleanup(func() {
		sh(t, h, "umount "+mp+" 2>/dev/null; umount "+bmp+" 2>/dev/null; mv /etc/fstab.soulbak-e /etc/fstab")
	})
	fstab := stamp(t, h, "/etc/fstab")
	task := func(src, size string) string {
		return `{name: t, module: core.mount.mounted, params: {path: ` + mp + `, src: ` + src + `, fstype: tmpfs, state: ephemeral, opts: "size=` + size + `,mode=0750"}}`
	}
	converge(t, h, "/srv/me/e1", task("tmpfs", "8m"), "/etc/fstab")
	if got := sh(t, h, "findmnt -rn -o SOURCE,FSTYPE,OPTIONS "+mp); !strings.HasPrefix(got, "tmpfs tmpfs ") || !strings.Contains(got, "size=8192k") || !strings.Contains(got, "mode=750") {
		t.Fatalf("after ephemeral mount: %q", got)
	}
	r := apply(t, h, "/srv/me/e2", "  - "+task("tmpfs", "16m")+"\n", true)
	if r.Failed || !r.Changed || !strings.Contains(r.Msg, "would remount") || !strings.Contains(r.Diff, "size=16m") {
		t.Fatalf("check mode, new options: %+v", r)
	}
	if got := sh(t, h, "findmnt -rn -o OPTIONS "+mp); !strings.Contains(got, "size=8192k") {
		t.Fatalf("check mode remounted: %q", got)
	}
	if r := apply(t, h, "/srv/me/e2", "  - "+task("tmpfs", "16m")+"\n", false); r.Failed || !r.Changed || !strings.Contains(r.Msg, "remounted") {
		t.Fatalf("new options: %+v", r)
	}
	if got := sh(t, h, "findmnt -rn -o OPTIONS "+mp); !strings.Contains(got, "size=16384k") {
		t.Fatalf("not remounted: %q", got)
	}
	if r := apply(t, h, "/srv/me/e2", "  - "+task("tmpfs", "16m")+"\n", false); r.Failed || r.Changed {
		t.Fatalf("second run with the new options: %+v", r)
	}
	if r := apply(t, h, "/srv/me/e3", "  - "+task("othersrc", "16m")+"\n", false); !r.Failed || r.Changed || !strings.Contains(r.Msg, "already mounted from tmpfs") {
		t.Fatalf("another source at the path: %+v", r)
	}
	if got := sh(t, h, "findmnt -rn -o SOURCE "+mp); got != "tmpfs\n" {
		t.Fatalf("the refused mount changed the mount: %q", got)
	}
	converge(t, h, "/srv/me/e4", `{name: t, module: core.mount.mounted, params: {path: `+bmp+`, src: /srv/me/bsrc, fstype: none, opts: bind, state: ephemeral}}`, "/etc/fstab")
	if got := sh(t, h, "cat "+bmp+"/f"); got != "hi\n" {
		t.Fatalf("bind mount: %q", got)
	}
	converge(t, h, "/srv/me/e5", `{name: t, module: core.mount.mounted, params: {path: `+mp+`, state: unmounted}}`, "/etc/fstab")
	if now := stamp(t, h, "/etc/fstab"); now != fstab {
		t.Fatalf("ephemeral mounts touched /etc/fstab: %s -> %s", fstab, now)
	}
	wantRefused(t, h, "/srv/me/e-bad", `{name: t, module: core.mount.mounted, params: {path: /srv/me/x, state: "${ 'ephemeral' }", fstype: tmpfs}}`, "core.mount.mounted", "src")
}

// TestMountRemountedOnLabHost: state remounted remounts what is mounted,
// with opts when given and fstab untouched; it always reports changed (as
// Ansible's), check mode changes nothing, and nothing mounted is an error.
func TestMountRemountedOnLabHost(t *testing.T) {
	h := host(t)
	const mp = "/srv/mr/tmp"
	sh(t, h, "mkdir -p "+mp+"; mount -t tmpfs -o size=8m tmpfs "+mp+"; touch /etc/fstab")
	t.Cleanup(func() { sh(t, h, "umount "+mp+" 2>/dev/null; true") })
	fstab := stamp(t, h, "/etc/fstab")
	task := `  - {name: t, module: core.mount.mounted, params: {path: ` + mp + `, state: remounted, opts: "ro"}}` + "\n"
	if r := apply(t, h, "/srv/mr/r", task, true); r.Failed || !r.Changed || !strings.Contains(r.Diff, "remount,ro") {
		t.Fatalf("check mode: %+v", r)
	}
	if got := sh(t, h, "findmnt -rn -o OPTIONS "+mp); !strings.HasPrefix(got, "rw,") {
		t.Fatalf("check mode remounted: %q", got)
	}
	for i := 0; i < 2; i++ {
		if r := apply(t, h, "/srv/mr/r", task, false); r.Failed || !r.Changed || !strings.Contains(r.Msg, "remounted") {
			t.Fatalf("run %d: %+v", i, r)
		}
	}
	if got := sh(t, h, "findmnt -rn -o OPTIONS "+mp); !strings.HasPrefix(got, "ro,") || !strings.Contains(got, "size=8192k") {
		t.Fatalf("after remounted ro: %q", got)
	}
	if r := apply(t, h, "/srv/mr/r2", `  - {name: t, module: core.mount.mounted, params: {path: `+mp+`, state: remounted, opts: "rw"}}`+"\n", false); r.Failed || !r.Changed {
		t.Fatalf("remount rw: %+v", r)
	}
	if got := sh(t, h, "findmnt -rn -o OPTIONS "+mp); !strings.HasPrefix(got, "rw,") {
		t.Fatalf("after remounted rw: %q", got)
	}
	if now := stamp(t, h, "/etc/fstab"); now != fstab {
		t.Fatalf("remounted touched /etc/fstab: %s -> %s", fstab, now)
	}
	r := apply(t, h, "/srv/mr/r3", `  - {name: t, module: core.mount.mounted, params: {path: /srv/mr/none, state: remounted}}`+"\n", false)
	if !r.Failed || !strings.Contains(r.Msg, `param "path"`) || !strings.Contains(r.Msg, "nothing is mounted") {
		t.Fatalf("remount of nothing: %+v", r)
	}
}

// TestMountBootFalseOnLabHost: boot: false writes noauto into the fstab
// entry (and keeps it when opts has it already); the entry converges and
// the mount is made all the same.
func TestMountBootFalseOnLabHost(t *testing.T) {
	h := host(t)
	const mp = "/srv/mb/tmp"
	sh(t, h, "mkdir -p /srv/mb; touch /etc/fstab; cp /etc/fstab /etc/fstab.soulbak-b")
	t.Cleanup(func() { sh(t, h, "umount "+mp+" 2>/dev/null; mv /etc/fstab.soulbak-b /etc/fstab") })
	converge(t, h, "/srv/mb/b1", `{name: t, module: core.mount.mounted, params: {path: `+mp+`, src: tmpfs, fstype: tmpfs, opts: "size=4m", boot: false}}`, "/etc/fstab")
	if got := sh(t, h, "grep "+mp+" /etc/fstab; findmnt -rn -o SOURCE "+mp); got != "tmpfs "+mp+" tmpfs size=4m,noauto 0 0\ntmpfs\n" {
		t.Fatalf("boot: false: %q", got)
	}
	converge(t, h, "/srv/mb/b2", `{name: t, module: core.mount.mounted, params: {path: `+mp+`, src: tmpfs, fstype: tmpfs, boot: false, state: present}}`, "/etc/fstab")
	if got := sh(t, h, "grep "+mp+" /etc/fstab"); got != "tmpfs "+mp+" tmpfs defaults,noauto 0 0\n" {
		t.Fatalf("boot: false with defaults: %q", got)
	}
	r := apply(t, h, "/srv/mb/b3", `  - {name: t, module: core.mount.mounted, params: {path: `+mp+`, src: tmpfs, fstype: tmpfs, opts: "noauto", boot: false, state: present}}`+"\n", false)
	if got := sh(t, h, "grep "+mp+" /etc/fstab"); r.Failed || got != "tmpfs "+mp+" tmpfs noauto 0 0\n" {
		t.Fatalf("noauto given: %+v %q", r, got)
	}
}
