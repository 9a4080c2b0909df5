package core

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
)

// agingParams are the password aging params, the chage flag of each and
// how a diff names it.
var agingParams = []struct {
	key, flag, what string
	get             func(*passwordAging) *int64
}{
	{"password_expire_min", "-m", "password min age", func(a *passwordAging) *int64 { return &a.min }},
	{"password_expire_max", "-M", "password max age", func(a *passwordAging) *int64 { return &a.max }},
	{"password_expire_warn", "-W", "password warn days", func(a *passwordAging) *int64 { return &a.warn }},
	{"password_expire_account_disable", "-I", "days inactive after password expiry", func(a *passwordAging) *int64 { return &a.inactive }},
}

// userCreation holds what only useradd uses: the skeleton and umask of a
// new home and the uid range of a new account.
type userCreation struct {
	skeleton, umask string
	uidMin, uidMax  *int64
}

var umaskRe = regexp.MustCompile(`^0?[0-7]{3}$`)

// parseUserExtras reads the aging and creation params into w.
func parseUserExtras(a *args, w *userWant) error {
	w.aging = passwordAging{-1, -1, -1, -1}
	w.agingGiven = map[string]bool{}
	for _, p := range agingParams {
		if n, ok := a.integer(p.key); ok {
			if n < -1 {
				return paramErr(p.key, "%d: want a number of days (-1 to unset)", n)
			}
			*p.get(&w.aging) = n
			w.agingGiven[p.key] = true
		}
	}
	w.creation.skeleton, w.creation.umask = a.str("skeleton"), a.str("umask")
	if n, ok := a.integer("uid_min"); ok {
		w.creation.uidMin = &n
	}
	if n, ok := a.integer("uid_max"); ok {
		w.creation.uidMax = &n
	}
	if a.err != nil {
		return a.err
	}
	if w.creation.umask != "" && !umaskRe.MatchString(w.creation.umask) {
		return paramErr("umask", "%q: want an octal umask such as 077 or 0027", w.creation.umask)
	}
	return nil
}

// creationArgs are the useradd arguments of c.
func (c userCreation) args(createHome bool) []string {
	var argv []string
	if createHome && c.skeleton != "" {
		argv = append(argv, "-k", c.skeleton)
	}
	if createHome && c.umask != "" {
		argv = append(argv, "-K", "UMASK="+c.umask)
	}
	if c.uidMin != nil {
		argv = append(argv, "-K", "UID_MIN="+strconv.FormatInt(*c.uidMin, 10))
	}
	if c.uidMax != nil {
		argv = append(argv, "-K", "UID_MAX="+strconv.FormatInt(*c.uidMax, 10))
	}
	return argv
}

// chageCommand returns the chage call that gives the account the wanted
// password aging (only the params given are compared, as Ansible does),
// and the diff lines; nil when it has it. exists is false for an account
// not created yet: every wanted value is shown.
func chageCommand(u passwdEntry, exists bool, w userWant) ([]string, []string) {
	var argv, diff []string
	for _, p := range agingParams {
		if !w.agingGiven[p.key] {
			continue
		}
		want := *p.get(&w.aging)
		have := *p.get(&u.aging)
		if exists && have == want {
			continue
		}
		argv = append(argv, p.flag, strconv.FormatInt(want, 10))
		if exists {
			diff = append(diff, fmt.Sprintf("user %s: %s %s -> %s", w.name, p.what, agingText(have), agingText(want)))
		} else {
			diff = append(diff, fmt.Sprintf("user %s: %s %s", w.name, p.what, agingText(want)))
		}
	}
	if argv == nil {
		return nil, nil
	}
	return append(append([]string{"chage"}, argv...), "--", w.name), diff
}

func agingText(n int64) string {
	if n < 0 {
		return "unset"
	}
	return strconv.FormatInt(n, 10)
}

// homeToCreate is the home directory core.user.present creates for an
// existing account, as Ansible's user does: with create_home: true given,
// the account's home when it does not exist ("" otherwise). A new
// account's home is useradd's.
func homeToCreate(u passwdEntry, exists bool, w userWant) string {
	if !exists || !w.createHomeGiven || !w.createHome {
		return ""
	}
	home := u.home
	if w.home != "" {
		home = w.home
	}
	if home == "" || home == "/" {
		return ""
	}
	if _, err := os.Lstat(home); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return home
}

// mkhomeCommand creates the home of an existing account from the skeleton
// with pam's mkhomedir_helper (what pam_mkhomedir runs), which copies the
// skeleton and gives the home to the user.
func mkhomeCommand(w userWant) []string {
	umask, skel := "0022", "/etc/skel"
	if w.creation.umask != "" {
		umask = w.creation.umask
	}
	if w.creation.skeleton != "" {
		skel = w.creation.skeleton
	}
	return []string{"mkhomedir_helper", w.name, umask, skel}
}
