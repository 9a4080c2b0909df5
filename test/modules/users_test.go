package modules

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/lab"
)

// Two real SHA-512 crypt hashes (openssl passwd -6), of "first-pass" and
// "second-pass".
const (
	hashFirst  = "$6$soulsalt1$9O7uM.1DthJUsz8pyUoIcmjPFCFVSO5Lnn8XSxOiOK049IxAAnHzJVuu473mxARm5fn9Vt/d/AMSonKhjdIjg/"
	hashSecond = "$6$soulsalt2$PGQ4eM9UeqAPbeGZPS8nWf2S.Z3lK5nrjCLWPAXPi4ZAF52ZmdF2n58UsDW/IvC2yndzRCf/Uzkq8y7iZSmWU1"
)

// accountFiles are the files a user or group change rewrites; converge
// checks that check mode and a converged apply leave them alone.
var accountFiles = []string{"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow"}

// wantFailed runs one task for real and asserts it failed when it ran
// (a mistake only the module can see), saying each of parts.
func wantFailed(t *testing.T, h *lab.Host, dir, task string, parts ...string) taskResult {
	t.Helper()
	r := apply(t, h, dir, "  - "+task+"\n", false)
	if !r.Failed {
		t.Fatalf("%s: did not fail: %+v", task, r)
	}
	for _, p := range parts {
		if !strings.Contains(r.Msg, p) {
			t.Fatalf("%s: msg %q does not say %q", task, r.Msg, p)
		}
	}
	return r
}

// freeLabID returns an id from `from` up that no user and no group of the
// host has.
func freeLabID(t *testing.T, h *lab.Host, from int) int {
	t.Helper()
	for id := from; id < from+1000; id++ {
		if sh(t, h, fmt.Sprintf("getent passwd %d >/dev/null || getent group %d >/dev/null || echo free", id, id)) == "free\n" {
			return id
		}
	}
	t.Fatal("no free id")
	return 0
}

func removeAccounts(t *testing.T, h *lab.Host, users, groups []string) {
	t.Helper()
	var b strings.Builder
	for _, u := range users {
		fmt.Fprintf(&b, "userdel -rf %s >/dev/null 2>&1; rm -rf /home/%s /srv/home-%s /var/mail/%s; ", u, u, u, u)
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "groupdel %s >/dev/null 2>&1; ", g)
	}
	sh(t, h, b.String()+"true")
}

// TestGroupsOnLabHost: a group with a gid, a second one sharing it with
// non_unique, absent (module and state; force for a user's primary
// group), and bad input refused.
func TestGroupsOnLabHost(t *testing.T) {
	h := host(t)
	groups := []string{"soulg1", "soulg2"}
	removeAccounts(t, h, []string{"soulgu"}, groups)
	t.Cleanup(func() { removeAccounts(t, h, []string{"soulgu"}, groups) })
	gid := freeLabID(t, h, 23000)
	sh(t, h, "mkdir -p /srv/m")

	converge(t, h, "/srv/m/g1", fmt.Sprintf(`{name: t, module: core.group.present, params: {name: soulg1, gid: %d}}`, gid), accountFiles...)
	if got := sh(t, h, "getent group soulg1 | cut -d: -f3"); got != fmt.Sprintf("%d\n", gid) {
		t.Fatalf("gid %q, want %d", got, gid)
	}
	// A taken gid is refused by groupadd unless non_unique.
	wantFailed(t, h, "/srv/m/g2-dup", fmt.Sprintf(`{name: t, module: core.group.present, params: {name: soulg2, gid: %d}}`, gid), "groupadd", "already exists")
	converge(t, h, "/srv/m/g2", fmt.Sprintf(`{name: t, module: core.group.present, params: {name: soulg2, gid: %d, non_unique: true}}`, gid), accountFiles...)
	if got := sh(t, h, "getent group soulg2 | cut -d: -f3"); got != fmt.Sprintf("%d\n", gid) {
		t.Fatalf("non-unique gid %q, want %d", got, gid)
	}
	wantFailed(t, h, "/srv/m/g-nu", `{name: t, module: core.group.present, params: {name: soulg3, non_unique: true}}`, `param "non_unique"`, "needs gid")
	wantRefused(t, h, "/srv/m/g-bad", `{name: t, module: core.group.present, params: {name: soulg1, state: gone}}`, "core.group.present", "state")

	converge(t, h, "/srv/m/g2-rm", `{name: t, module: core.group.absent, params: {name: soulg2}}`, accountFiles...)
	// The primary group of a user goes only with force.
	sh(t, h, "useradd -M -g soulg1 soulgu")
	wantFailed(t, h, "/srv/m/g1-prim", `{name: t, module: core.group.absent, params: {name: soulg1}}`, "groupdel", "primary group")
	converge(t, h, "/srv/m/g1-rm", `{name: t, module: core.group.present, params: {name: soulg1, state: absent, force: true, local: true}}`, accountFiles...)
	if got := sh(t, h, "getent group soulg1 soulg2 || echo gone"); got != "gone\n" {
		t.Fatalf("groups left: %q", got)
	}
}

// TestUsersOnLabHost: a user created with a password hash, a comment and
// an expiry; the hash never shows in a result; update_password: on_create
// keeps it; password_lock; expires -1; a non-unique uid; move_home; absent
// with remove deleting the home and mail spool; bad input refused.
func TestUsersOnLabHost(t *testing.T) {
	h := host(t)
	users := []string{"soulu1", "soulu2", "soulu3"}
	removeAccounts(t, h, users, nil)
	t.Cleanup(func() { removeAccounts(t, h, users, nil) })
	uid := freeLabID(t, h, 24000)
	sh(t, h, "mkdir -p /srv/m")
	shadowHash := func(u string) string { return strings.TrimSpace(sh(t, h, "getent shadow "+u+" | cut -d: -f2")) }

	// 1893456000 is 2030-01-01 00:00 UTC.
	create := fmt.Sprintf(`{name: t, module: core.user.present, params: {name: soulu1, uid: %d, comment: "Soul One", shell: /bin/bash, password: "%s", expires: 1893456000}}`, uid, hashFirst)
	r := apply(t, h, "/srv/m/u1c", "  - "+create+"\n", true)
	if strings.Contains(r.Diff+r.Msg, hashFirst) || !strings.Contains(r.Diff, "(password set)") || !strings.Contains(r.Diff, "expires 2030-01-01") {
		t.Fatalf("check mode result shows the hash or lacks the change: %+v", r)
	}
	converge(t, h, "/srv/m/u1", create, accountFiles...)
	if got := shadowHash("soulu1"); got != hashFirst {
		t.Fatalf("shadow hash %q", got)
	}
	if got := sh(t, h, "getent passwd soulu1 | cut -d: -f3,5,7; test -d /home/soulu1 && echo home"); got != fmt.Sprintf("%d:Soul One:/bin/bash\nhome\n", uid) {
		t.Fatalf("passwd entry: %q", got)
	}
	if got := sh(t, h, "LC_ALL=C chage -l soulu1 | grep 'Account expires'"); !strings.Contains(got, "Jan 01, 2030") {
		t.Fatalf("chage -l: %q", got)
	}

	// A new hash: changed, the diff says so without the hash.
	second := fmt.Sprintf(`{name: t, module: core.user.present, params: {name: soulu1, password: "%s"}}`, hashSecond)
	r = apply(t, h, "/srv/m/u1p", "  - "+second+"\n", false)
	if r.Failed || !r.Changed || strings.Contains(r.Diff+r.Msg, hashSecond) || strings.Contains(r.Diff+r.Msg, hashFirst) || !strings.Contains(r.Diff, "(password changed)") {
		t.Fatalf("password change: %+v", r)
	}
	if got := shadowHash("soulu1"); got != hashSecond {
		t.Fatalf("shadow hash %q after change", got)
	}
	// on_create: an existing user keeps their password.
	onCreate := fmt.Sprintf(`{name: t, module: core.user.present, params: {name: soulu1, password: "%s", update_password: on_create}}`, hashFirst)
	if r := apply(t, h, "/srv/m/u1oc", "  - "+onCreate+"\n", false); r.Failed || r.Changed {
		t.Fatalf("update_password on_create changed an existing user: %+v", r)
	}
	if got := shadowHash("soulu1"); got != hashSecond {
		t.Fatalf("on_create changed the hash to %q", got)
	}
	// A clear-text password or a bad update_password never runs.
	wantRefused(t, h, "/srv/m/u1-clear", `{name: t, module: core.user.present, params: {name: soulu1, password: "first-pass"}}`, "core.user.present", "password")
	wantRefused(t, h, "/srv/m/u1-clear2", `{name: t, module: core.user.present, params: {name: soulu1, password: "${ 'first-pass' }"}}`, "core.user.present", "password")
	wantRefused(t, h, "/srv/m/u1-up", `{name: t, module: core.user.present, params: {name: soulu1, update_password: sometimes}}`, "core.user.present", "update_password")

	// Lock: the hash gets a "!"; the same hash with the lock still on is converged.
	converge(t, h, "/srv/m/u1l", `{name: t, module: core.user.present, params: {name: soulu1, password_lock: true}}`, accountFiles...)
	if got := shadowHash("soulu1"); got != "!"+hashSecond {
		t.Fatalf("locked hash %q", got)
	}
	if r := apply(t, h, "/srv/m/u1p2", "  - "+second+"\n", false); r.Failed || r.Changed {
		t.Fatalf("the same hash on a locked account: %+v", r)
	}
	converge(t, h, "/srv/m/u1u", `{name: t, module: core.user.present, params: {name: soulu1, password_lock: false}}`, accountFiles...)
	if got := shadowHash("soulu1"); got != hashSecond {
		t.Fatalf("unlocked hash %q", got)
	}

	// expires -1 removes the expiry.
	converge(t, h, "/srv/m/u1e", `{name: t, module: core.user.present, params: {name: soulu1, expires: -1}}`, accountFiles...)
	if got := sh(t, h, "LC_ALL=C chage -l soulu1 | grep 'Account expires'"); !strings.Contains(got, "never") {
		t.Fatalf("chage -l after expires -1: %q", got)
	}

	// A second user on the same uid only with non_unique.
	wantFailed(t, h, "/srv/m/u2-dup", fmt.Sprintf(`{name: t, module: core.user.present, params: {name: soulu2, uid: %d}}`, uid), "useradd", "not unique")
	converge(t, h, "/srv/m/u2", fmt.Sprintf(`{name: t, module: core.user.present, params: {name: soulu2, uid: %d, non_unique: true}}`, uid), accountFiles...)
	if got := sh(t, h, "id -u soulu2"); got != strconv.Itoa(uid)+"\n" {
		t.Fatalf("id -u soulu2: %q", got)
	}

	// move_home moves the home's content.
	sh(t, h, "echo keep > /home/soulu2/file; chown soulu2 /home/soulu2/file")
	converge(t, h, "/srv/m/u2h", `{name: t, module: core.user.present, params: {name: soulu2, home: /srv/home-soulu2, move_home: true}}`, accountFiles...)
	if got := sh(t, h, "cat /srv/home-soulu2/file; test -e /home/soulu2 || echo old-gone"); got != "keep\nold-gone\n" {
		t.Fatalf("moved home: %q", got)
	}

	// Absent with remove takes the home and the mail spool along.
	sh(t, h, "touch /var/mail/soulu2; chown soulu2 /var/mail/soulu2")
	converge(t, h, "/srv/m/u2rm", `{name: t, module: core.user.absent, params: {name: soulu2, remove: true}}`, accountFiles...)
	if got := sh(t, h, "getent passwd soulu2 || echo no-user; test -e /srv/home-soulu2 || echo no-home; test -e /var/mail/soulu2 || echo no-mail"); got != "no-user\nno-home\nno-mail\n" {
		t.Fatalf("after absent with remove: %q", got)
	}
	// state: absent without remove keeps the home.
	converge(t, h, "/srv/m/u1rm", `{name: t, module: core.user.present, params: {name: soulu1, state: absent, force: true}}`, accountFiles...)
	if got := sh(t, h, "getent passwd soulu1 || echo no-user; test -d /home/soulu1 && echo home-kept"); got != "no-user\nhome-kept\n" {
		t.Fatalf("after state absent: %q", got)
	}

	// A home from a skeleton with a umask, and password aging by chage.
	sh(t, h, "rm -rf /srv/skel-soul; mkdir -p /srv/skel-soul; echo hi > /srv/skel-soul/.profile")
	converge(t, h, "/srv/m/u3", `{name: t, module: core.user.present, params: {name: soulu3, skeleton: /srv/skel-soul, umask: "077", password_expire_max: 90, password_expire_warn: 10}}`, accountFiles...)
	if got := sh(t, h, "stat -c %a /home/soulu3; cat /home/soulu3/.profile; LC_ALL=C chage -l soulu3 | grep -E 'Maximum|warning'"); got != "700\nhi\nMaximum number of days between password change\t\t: 90\nNumber of days of warning before password expires\t: 10\n" {
		t.Fatalf("home and aging: %q", got)
	}
	converge(t, h, "/srv/m/u3b", `{name: t, module: core.user.present, params: {name: soulu3, password_expire_max: -1, password_expire_account_disable: 7}}`, accountFiles...)
	if got := sh(t, h, "LC_ALL=C chage -l soulu3 | grep Maximum"); !strings.HasSuffix(got, ": -1\n") {
		t.Fatalf("aging after change: %q", got)
	}
	if got := sh(t, h, "getent shadow soulu3 | cut -d: -f5,7"); got != ":7\n" {
		t.Fatalf("shadow max and inactive: %q", got)
	}

	// local: true creates and finds the account in /etc/passwd.
	converge(t, h, "/srv/m/u1local", `{name: t, module: core.user.present, params: {name: soulu1, local: true, create_home: false}}`, accountFiles...)

	// create_home: true makes the missing home of an existing user, from
	// the skeleton and owned by them, as Ansible does.
	sh(t, h, "rm -rf /home/soulu1")
	converge(t, h, "/srv/m/u1home", `{name: t, module: core.user.present, params: {name: soulu1, create_home: true}}`, "/home/soulu1")
	if got := sh(t, h, "stat -c %U /home/soulu1 /home/soulu1/.profile"); got != "soulu1\nsoulu1\n" {
		t.Fatalf("created home: %q", got)
	}
}
