package core

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// userWant is the wanted state of an account; nil pointers are not managed.
type userWant struct {
	name         string
	uid          *int64
	nonUnique    bool
	group        string
	groups       []string
	manageGroups bool
	append       bool
	comment      *string
	shell, home  string
	moveHome     bool
	system       bool
	createHome   bool
	// createHomeGiven: create_home was given, so a missing home of an
	// existing account is created too.
	createHomeGiven bool
	local           bool
	password        string // a crypt hash; "" = not managed
	updateAlways    bool
	lock            *bool
	expireDays      *int64 // days since the epoch, -1 = never
	aging           passwordAging
	agingGiven      map[string]bool // the aging params given
	creation        userCreation
	groupsMissing   []string
}

func parseUserWant(a *args) (userWant, error) {
	w := userWant{name: a.str("name"), group: a.scalar("group"), groups: a.strList("groups"), manageGroups: a.has("groups"),
		append: a.boolean("append", false), shell: a.str("shell"), home: a.str("home"), system: a.boolean("system", false),
		nonUnique: a.boolean("non_unique", false), moveHome: a.boolean("move_home", false), local: a.boolean("local", false),
		password: a.str("password")}
	w.createHome, w.createHomeGiven = a.boolean("create_home", !w.system), a.has("create_home")
	if uid, ok := a.integer("uid"); ok {
		w.uid = &uid
	}
	if a.has("comment") {
		c := a.str("comment")
		w.comment = &c
	}
	if a.has("password_lock") {
		l := a.boolean("password_lock", false)
		w.lock = &l
	}
	update := a.str("update_password")
	var expires float64
	if a.has("expires") {
		var ok bool
		if expires, ok = toFloat64(a.p["expires"]); !ok {
			a.failf("expires", "must be a number, got %v", a.p["expires"])
		}
	}
	if a.err != nil {
		return w, a.err
	}
	if err := parseUserExtras(a, &w); err != nil {
		return w, err
	}
	if !accountNameRe.MatchString(w.name) {
		return w, fmt.Errorf("%q is not a valid user name", w.name)
	}
	if w.nonUnique && w.uid == nil {
		return w, paramErr("non_unique", "needs uid")
	}
	if w.comment != nil && strings.ContainsAny(*w.comment, ":\n\r") {
		return w, paramErr("comment", "must be one line without ':'")
	}
	for _, f := range []struct{ key, v string }{{"shell", w.shell}, {"home", w.home}} {
		if strings.ContainsAny(f.v, ":\n\r") {
			return w, paramErr(f.key, "must be one line without ':'")
		}
	}
	if a.has("password") {
		if err := checkPasswordHash(w.password); err != nil {
			return w, paramErr("password", "%v", err)
		}
	}
	switch update {
	case "", "always":
		w.updateAlways = true
	case "on_create":
	default:
		return w, paramErr("update_password", "%q: want always or on_create", update)
	}
	if a.has("expires") {
		if math.IsNaN(expires) || math.IsInf(expires, 0) || math.Abs(expires) > 1e13 {
			return w, paramErr("expires", "want seconds since the epoch")
		}
		d := int64(-1)
		if expires >= 0 {
			d = int64(math.Floor(expires / 86400))
		}
		w.expireDays = &d
	}
	return w, nil
}

// expiryText shows an expiry in days since the epoch as a date.
func expiryText(days int64) string {
	if days < 0 {
		return "never"
	}
	return time.Unix(days*86400, 0).UTC().Format(time.DateOnly)
}

// expiryArg is the -e argument of useradd/usermod for an expiry.
func expiryArg(days int64) string {
	if days < 0 {
		return ""
	}
	return expiryText(days)
}

// userCommand returns the useradd or usermod call that converges the
// account, and the diff lines; nil when it is converged. The password hash
// is in argv (-p) but never in the diff.
func userCommand(db accountDB, w userWant) ([]string, []string) {
	u, exists := db.users[w.name]
	if !exists {
		return userAddCommand(w)
	}
	var argv, diff []string
	if w.uid != nil && int64(u.uid) != *w.uid {
		argv = append(argv, "-u", strconv.FormatInt(*w.uid, 10))
		if w.nonUnique {
			argv = append(argv, "-o")
		}
		diff = append(diff, fmt.Sprintf("uid %d -> %d", u.uid, *w.uid))
	}
	if w.group != "" {
		if gid, ok := db.gidOf(w.group); !ok || gid != u.gid {
			argv = append(argv, "-g", w.group)
			diff = append(diff, fmt.Sprintf("primary group %s -> %s", db.byGID[u.gid], w.group))
		}
	}
	if w.comment != nil && u.gecos != *w.comment {
		argv = append(argv, "-c", *w.comment)
		diff = append(diff, fmt.Sprintf("comment %q -> %q", u.gecos, *w.comment))
	}
	if w.shell != "" && u.shel != w.shell {
		argv = append(argv, "-s", w.shell)
		diff = append(diff, fmt.Sprintf("shell %s -> %s", u.shel, w.shell))
	}
	if w.home != "" && u.home != w.home {
		argv = append(argv, "-d", w.home)
		if w.moveHome {
			argv = append(argv, "-m")
			diff = append(diff, fmt.Sprintf("home %s -> %s (moved)", u.home, w.home))
		} else {
			diff = append(diff, fmt.Sprintf("home %s -> %s", u.home, w.home))
		}
	}
	if w.manageGroups {
		have := db.supplementary(w.name)
		want := slices.Clone(w.groups)
		if w.append {
			for _, g := range have {
				if !slices.Contains(want, g) {
					want = append(want, g)
				}
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		if !slices.Equal(have, want) {
			argv = append(argv, "-G", strings.Join(want, ","))
			diff = append(diff, fmt.Sprintf("groups [%s] -> [%s]", strings.Join(have, ","), strings.Join(want, ",")))
		}
	}
	if w.expireDays != nil && max(*w.expireDays, -1) != max(u.expire, -1) {
		argv = append(argv, "-e", expiryArg(*w.expireDays))
		diff = append(diff, fmt.Sprintf("expires %s -> %s", expiryText(u.expire), expiryText(*w.expireDays)))
	}
	pa, pd := passwordChange(u, w)
	argv, diff = append(argv, pa...), append(diff, pd...)
	if argv == nil {
		return nil, nil
	}
	for i := range diff {
		diff[i] = "user " + w.name + ": " + diff[i]
	}
	return append(append([]string{"usermod"}, argv...), "--", w.name), diff
}

// passwordChange is the usermod arguments and diff lines for the password
// and its lock, as Ansible's user module decides them: the hashes are
// compared without the lock's "!", -L/-U give way to -p when the hash
// changes, and a locked new hash is written as "!hash".
func passwordChange(u passwdEntry, w userWant) ([]string, []string) {
	var argv, diff []string
	locked := strings.HasPrefix(u.hash, "!")
	switch {
	case w.lock != nil && *w.lock && !locked:
		argv, diff = []string{"-L"}, []string{"password locked"}
	case w.lock != nil && !*w.lock && locked:
		argv, diff = []string{"-U"}, []string{"password unlocked"}
	}
	if w.password != "" && w.updateAlways && strings.TrimLeft(u.hash, "!") != strings.TrimLeft(w.password, "!") {
		hash := w.password
		if w.lock != nil && *w.lock {
			hash = "!" + strings.TrimLeft(hash, "!")
		}
		return []string{"-p", hash}, append(diff, "(password changed)")
	}
	return argv, diff
}

func userAddCommand(w userWant) ([]string, []string) {
	argv := []string{"useradd"}
	diff := "+ user " + w.name
	if w.uid != nil {
		argv = append(argv, "-u", strconv.FormatInt(*w.uid, 10))
		if w.nonUnique {
			argv = append(argv, "-o")
		}
		diff += fmt.Sprintf(" uid %d", *w.uid)
	}
	if w.group != "" {
		argv = append(argv, "-g", w.group)
	}
	if len(w.groups) > 0 {
		argv = append(argv, "-G", strings.Join(w.groups, ","))
	}
	if w.comment != nil {
		argv = append(argv, "-c", *w.comment)
	}
	if w.shell != "" {
		argv = append(argv, "-s", w.shell)
	}
	if w.home != "" {
		argv = append(argv, "-d", w.home)
	}
	if w.system {
		argv = append(argv, "-r")
	}
	if w.createHome {
		argv = append(argv, "-m")
	} else {
		argv = append(argv, "-M")
	}
	argv = append(argv, w.creation.args(w.createHome)...)
	if w.expireDays != nil {
		argv = append(argv, "-e", expiryArg(*w.expireDays))
		diff += " expires " + expiryText(*w.expireDays)
	}
	if w.password != "" {
		hash := w.password
		if w.lock != nil && *w.lock {
			hash = "!" + strings.TrimLeft(hash, "!")
		}
		argv = append(argv, "-p", hash)
		diff += " (password set)"
	}
	return append(argv, "--", w.name), []string{diff}
}

// toFloat64 converts a number param (integer or float) to float64.
func toFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	n, ok := toInt64(v)
	return float64(n), ok
}
