package core

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

// freeID returns an id in [from, from+1000) used by no user and no group.
func freeID(t *testing.T, db accountDB, from int) int {
	t.Helper()
	used := map[int]bool{}
	for _, u := range db.users {
		used[u.uid] = true
	}
	for _, g := range db.groups {
		used[g.gid] = true
	}
	for id := from; id < from+1000; id++ {
		if !used[id] {
			return id
		}
	}
	t.Fatal("no free id")
	return 0
}

// cleanupAccounts removes the test users and groups, also when the test
// fails half way.
func cleanupAccounts(t *testing.T, users, groups []string) {
	t.Helper()
	remove := func() {
		for _, u := range users {
			_ = exec.Command("userdel", "-r", u).Run()
		}
		for _, g := range groups {
			_ = exec.Command("groupdel", g).Run()
		}
	}
	db, err := readAccounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if _, ok := db.users[u]; ok {
			t.Fatalf("user %s exists before the test; refusing to touch it", u)
		}
	}
	for _, g := range groups {
		if _, ok := db.groups[g]; ok {
			t.Fatalf("group %s exists before the test; refusing to touch it", g)
		}
	}
	t.Cleanup(remove)
}

func TestGroupPresent(t *testing.T) {
	needRoot(t)
	const name = "soulstack-tg1"
	cleanupAccounts(t, nil, []string{name})
	db, _ := readAccounts()
	gid := freeID(t, db, 29000)

	res := run(t, "core.group.present", map[string]any{"name": name}, &module.Env{Check: true})
	wantChanged(t, res, true)
	if db, _ := readAccounts(); db.groups[name].name != "" {
		t.Fatal("check mode created the group")
	}
	wantChanged(t, run(t, "core.group.present", map[string]any{"name": name}, nil), true)
	before := snap(t, "/etc/group")
	wantChanged(t, run(t, "core.group.present", map[string]any{"name": name}, nil), false)
	before.untouched(t, "/etc/group")

	params := map[string]any{"name": name, "gid": gid}
	res = run(t, "core.group.present", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "gid") {
		t.Errorf("diff %q", res.Diff)
	}
	before.untouched(t, "/etc/group")
	res = run(t, "core.group.present", params, nil)
	wantChanged(t, res, true)
	if res.Data["gid"] != int64(gid) {
		t.Errorf("data %v, want gid %d", res.Data, gid)
	}
	wantChanged(t, run(t, "core.group.present", params, nil), false)
	_, err := runErr(t, "core.group.present", map[string]any{"name": "bad name!"}, nil)
	wantErrContains(t, err, "not a valid group name")
}

func TestUserPresent(t *testing.T) {
	needRoot(t)
	const user, g1, g2 = "soulstack-tu1", "soulstack-tug1", "soulstack-tug2"
	cleanupAccounts(t, []string{user}, []string{user, g1, g2})
	for _, g := range []string{g1, g2} {
		wantChanged(t, run(t, "core.group.present", map[string]any{"name": g}, nil), true)
	}
	db, _ := readAccounts()
	uid := freeID(t, db, 29500)
	home := "/home/" + user
	params := map[string]any{"name": user, "uid": uid, "groups": []any{g1}, "shell": "/bin/sh", "home": home}

	res := run(t, "core.user.present", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if db, _ := readAccounts(); db.users[user].name != "" {
		t.Fatal("check mode created the user")
	}
	res = run(t, "core.user.present", params, nil)
	wantChanged(t, res, true)
	want := map[string]any{"name": user, "uid": int64(uid), "home": home, "shell": "/bin/sh", "comment": "", "groups": []any{g1}}
	got := res.Data
	delete(got, "gid")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("data (-want +got):\n%s", diff)
	}
	passwd := snap(t, "/etc/passwd")
	group := snap(t, "/etc/group")
	wantChanged(t, run(t, "core.user.present", params, nil), false)
	passwd.untouched(t, "/etc/passwd")
	group.untouched(t, "/etc/group")

	// Check mode on a changed shell and groups: a diff, nothing touched.
	changed := map[string]any{"name": user, "shell": "/bin/bash", "groups": []any{g2}}
	res = run(t, "core.user.present", changed, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "shell /bin/sh -> /bin/bash") || !strings.Contains(res.Diff, "groups ["+g1+"] -> ["+g2+"]") {
		t.Errorf("diff %q", res.Diff)
	}
	passwd.untouched(t, "/etc/passwd")

	// Exact groups replace, append adds.
	res = run(t, "core.user.present", changed, nil)
	wantChanged(t, res, true)
	if diff := cmp.Diff([]any{g2}, res.Data["groups"]); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	res = run(t, "core.user.present", map[string]any{"name": user, "groups": []any{g1}, "append": true}, nil)
	wantChanged(t, res, true)
	if diff := cmp.Diff([]any{g1, g2}, res.Data["groups"]); diff != "" {
		t.Errorf("groups after append (-want +got):\n%s", diff)
	}
	wantChanged(t, run(t, "core.user.present", map[string]any{"name": user, "groups": []any{g2}, "append": true}, nil), false)

	_, err := runErr(t, "core.user.present", map[string]any{"name": user, "groups": []any{"soulstack-nosuch"}}, nil)
	wantErrContains(t, err, `group "soulstack-nosuch" does not exist`)
	// In check mode a group that an earlier task would create is no error.
	res = run(t, "core.user.present", map[string]any{"name": user, "groups": []any{"soulstack-nosuch"}}, &module.Env{Check: true})
	wantChanged(t, res, true)
}
