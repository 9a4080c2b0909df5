package core

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	testHashA = "$6$saltsalt$Yk5mB7tQ0kVtJ3hU2a0m1w5y8Q6oQ9oQ1x0r2YbQvC6jB8s4xH5yq9D1n3oP7f0e2W4k6L8z1C3v5B7n9M1q0/"
	testHashB = "$y$j9T$abcdefghijklmnopqrstu.$0123456789abcdefghijklmnopqrstuvwxyzABCDE"
)

// testDB is an account database with one user, alice (uid 1000, group
// staff), whose password is testHashA and whose account expires on
// 2030-01-01 (day 21915).
func testDB(hash string, expire int64) accountDB {
	return accountDB{
		users: map[string]passwdEntry{"alice": {name: "alice", uid: 1000, gid: 50, gecos: "Alice", home: "/home/alice", shel: "/bin/sh",
			hash: hash, hasShadow: true, expire: expire}},
		groups: map[string]groupEntry{"staff": {name: "staff", gid: 50}, "adm": {name: "adm", gid: 4, members: []string{"alice"}}},
		byGID:  map[int]string{50: "staff", 4: "adm"},
	}
}

func ptr[T any](v T) *T { return &v }

func TestUserCommand(t *testing.T) {
	tests := []struct {
		name     string
		hash     string
		expire   int64
		want     userWant
		argv     []string // nil: converged
		diffHave []string
	}{
		{"same password is converged", testHashA, -1, userWant{name: "alice", password: testHashA, updateAlways: true}, nil, nil},
		{"new password, hash only in argv", testHashA, -1, userWant{name: "alice", password: testHashB, updateAlways: true},
			[]string{"usermod", "-p", testHashB, "--", "alice"}, []string{"(password changed)"}},
		{"on_create keeps an existing password", testHashA, -1, userWant{name: "alice", password: testHashB}, nil, nil},
		{"locked account with the same hash is converged", "!" + testHashA, -1, userWant{name: "alice", password: testHashA, updateAlways: true}, nil, nil},
		{"lock", testHashA, -1, userWant{name: "alice", lock: ptr(true)}, []string{"usermod", "-L", "--", "alice"}, []string{"password locked"}},
		{"lock when locked", "!" + testHashA, -1, userWant{name: "alice", lock: ptr(true)}, nil, nil},
		{"unlock", "!" + testHashA, -1, userWant{name: "alice", lock: ptr(false)}, []string{"usermod", "-U", "--", "alice"}, []string{"password unlocked"}},
		{"new hash and lock in one -p", testHashA, -1, userWant{name: "alice", password: testHashB, updateAlways: true, lock: ptr(true)},
			[]string{"usermod", "-p", "!" + testHashB, "--", "alice"}, []string{"password locked", "(password changed)"}},
		{"expiry set", testHashA, -1, userWant{name: "alice", expireDays: ptr(int64(21915))},
			[]string{"usermod", "-e", "2030-01-01", "--", "alice"}, []string{"expires never -> 2030-01-01"}},
		{"same expiry day", testHashA, 21915, userWant{name: "alice", expireDays: ptr(int64(21915))}, nil, nil},
		{"expiry removed", testHashA, 21915, userWant{name: "alice", expireDays: ptr(int64(-1))},
			[]string{"usermod", "-e", "", "--", "alice"}, []string{"expires 2030-01-01 -> never"}},
		{"no expiry stays", testHashA, -1, userWant{name: "alice", expireDays: ptr(int64(-1))}, nil, nil},
		{"epoch 0 is a date", testHashA, -1, userWant{name: "alice", expireDays: ptr(int64(0))},
			[]string{"usermod", "-e", "1970-01-01", "--", "alice"}, []string{"expires never -> 1970-01-01"}},
		{"comment", testHashA, -1, userWant{name: "alice", comment: ptr("Alice Liddell")},
			[]string{"usermod", "-c", "Alice Liddell", "--", "alice"}, []string{`comment "Alice" -> "Alice Liddell"`}},
		{"same comment", testHashA, -1, userWant{name: "alice", comment: ptr("Alice")}, nil, nil},
		{"non-unique uid", testHashA, -1, userWant{name: "alice", uid: ptr(int64(0)), nonUnique: true},
			[]string{"usermod", "-u", "0", "-o", "--", "alice"}, []string{"uid 1000 -> 0"}},
		{"home moved", testHashA, -1, userWant{name: "alice", home: "/srv/alice", moveHome: true},
			[]string{"usermod", "-d", "/srv/alice", "-m", "--", "alice"}, []string{"home /home/alice -> /srv/alice (moved)"}},
		{"append keeps groups", testHashA, -1, userWant{name: "alice", groups: []string{"staff"}, manageGroups: true, append: true},
			[]string{"usermod", "-G", "adm,staff", "--", "alice"}, []string{"groups [adm] -> [adm,staff]"}},
		{"new user with everything", "", -1, userWant{name: "bob", uid: ptr(int64(1000)), nonUnique: true, comment: ptr("Bob"), password: testHashB,
			lock: ptr(true), expireDays: ptr(int64(-1)), createHome: true},
			[]string{"useradd", "-u", "1000", "-o", "-c", "Bob", "-m", "-e", "", "-p", "!" + testHashB, "--", "bob"}, []string{"+ user bob uid 1000 expires never (password set)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv, diff := userCommand(testDB(tc.hash, tc.expire), tc.want)
			if d := cmp.Diff(tc.argv, argv); d != "" {
				t.Fatalf("argv (-want +got):\n%s", d)
			}
			text := strings.Join(diff, "\n")
			for _, h := range tc.diffHave {
				if !strings.Contains(text, h) {
					t.Errorf("diff %q lacks %q", text, h)
				}
			}
			for _, secret := range []string{testHashA, testHashB, "$6$", "$y$"} {
				if strings.Contains(text, secret) {
					t.Errorf("diff %q shows a password hash", text)
				}
			}
		})
	}
}

func TestParseUserWant(t *testing.T) {
	ok := []struct {
		name    string
		p       map[string]any
		expires int64
	}{
		{"epoch seconds round down to the day", map[string]any{"name": "a", "expires": 1893456000.5}, 21915},
		{"integer epoch", map[string]any{"name": "a", "expires": int64(1893542399)}, 21915},
		{"negative removes", map[string]any{"name": "a", "expires": int64(-2529881062)}, -1},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			w, err := parseUserWant(newArgs(tc.p))
			if err != nil {
				t.Fatal(err)
			}
			if w.expireDays == nil || *w.expireDays != tc.expires {
				t.Fatalf("expireDays = %v, want %d", w.expireDays, tc.expires)
			}
		})
	}
	bad := []struct {
		name  string
		p     map[string]any
		param string
	}{
		{"clear-text password", map[string]any{"name": "a", "password": "hunter2hunter2"}, "password"},
		{"empty password", map[string]any{"name": "a", "password": ""}, "password"},
		{"password with a colon", map[string]any{"name": "a", "password": "$6$a:b$c"}, "password"},
		{"update_password", map[string]any{"name": "a", "update_password": "sometimes"}, "update_password"},
		{"non_unique without uid", map[string]any{"name": "a", "non_unique": true}, "non_unique"},
		{"comment with a colon", map[string]any{"name": "a", "comment": "a:b"}, "comment"},
		{"expires not a number", map[string]any{"name": "a", "expires": "tomorrow"}, "expires"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseUserWant(newArgs(tc.p))
			wantErrContains(t, err, `"`+tc.param+`"`)
			if pw, _ := tc.p["password"].(string); pw != "" && strings.Contains(err.Error(), pw) {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
}

func TestChageCommand(t *testing.T) {
	have := passwdEntry{name: "alice", aging: passwordAging{min: 0, max: 99999, warn: 7, inactive: -1}}
	tests := []struct {
		name   string
		given  map[string]int64
		exists bool
		argv   []string
		diff   []string
	}{
		{"nothing given", nil, true, nil, nil},
		{"same values", map[string]int64{"password_expire_max": 99999, "password_expire_warn": 7}, true, nil, nil},
		{"max and inactive change", map[string]int64{"password_expire_max": 90, "password_expire_account_disable": 30, "password_expire_min": 0}, true,
			[]string{"chage", "-M", "90", "-I", "30", "--", "alice"},
			[]string{"user alice: password max age 99999 -> 90", "user alice: days inactive after password expiry unset -> 30"}},
		{"unset", map[string]int64{"password_expire_max": -1}, true, []string{"chage", "-M", "-1", "--", "alice"}, []string{"user alice: password max age 99999 -> unset"}},
		{"new account shows every value", map[string]int64{"password_expire_warn": 7}, false, []string{"chage", "-W", "7", "--", "alice"}, []string{"user alice: password warn days 7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]any{"name": "alice"}
			for k, v := range tc.given {
				p[k] = v
			}
			w, err := parseUserWant(newArgs(p))
			if err != nil {
				t.Fatal(err)
			}
			argv, diff := chageCommand(have, tc.exists, w)
			if d := cmp.Diff(tc.argv, argv); d != "" {
				t.Errorf("argv (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.diff, diff); d != "" {
				t.Errorf("diff (-want +got):\n%s", d)
			}
		})
	}
	_, err := parseUserWant(newArgs(map[string]any{"name": "a", "password_expire_max": int64(-2)}))
	wantErrContains(t, err, `"password_expire_max"`)
	_, err = parseUserWant(newArgs(map[string]any{"name": "a", "umask": "0999"}))
	wantErrContains(t, err, `"umask"`)
}

func TestUserAddCreationArgs(t *testing.T) {
	p := map[string]any{"name": "bob", "skeleton": "/etc/skel.app", "umask": "077", "uid_min": int64(5000), "uid_max": int64(5999)}
	w, err := parseUserWant(newArgs(p))
	if err != nil {
		t.Fatal(err)
	}
	w.createHome = true
	argv, _ := userCommand(accountDB{}, w)
	want := []string{"useradd", "-m", "-k", "/etc/skel.app", "-K", "UMASK=077", "-K", "UID_MIN=5000", "-K", "UID_MAX=5999", "--", "bob"}
	if d := cmp.Diff(want, argv); d != "" {
		t.Errorf("argv (-want +got):\n%s", d)
	}
	// Without a home, skeleton and umask have nothing to apply to.
	w.createHome = false
	argv, _ = userCommand(accountDB{}, w)
	want = []string{"useradd", "-M", "-K", "UID_MIN=5000", "-K", "UID_MAX=5999", "--", "bob"}
	if d := cmp.Diff(want, argv); d != "" {
		t.Errorf("argv without home (-want +got):\n%s", d)
	}
}
