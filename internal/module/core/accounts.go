package core

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// passwdEntry is one line of /etc/passwd, with the user's /etc/shadow
// fields when the shadow file has them.
type passwdEntry struct {
	name       string
	uid, gid   int
	gecos      string
	home, shel string
	// hash is the shadow password field ("!" prefix: locked); expire is
	// the account expiry in days since the epoch, -1 when unset.
	hash      string
	hasShadow bool
	expire    int64
	// aging is the password aging of /etc/shadow, -1 where unset.
	aging passwordAging
}

// passwordAging is the min, max, warn and inactive days of /etc/shadow.
type passwordAging struct{ min, max, warn, inactive int64 }

type groupEntry struct {
	name    string
	gid     int
	members []string
}

// accountDB is /etc/passwd, /etc/shadow and /etc/group as read at one
// moment. Accounts that only NSS knows (LDAP, SSSD) are not in it: see
// nssHas.
type accountDB struct {
	users  map[string]passwdEntry
	groups map[string]groupEntry
	byGID  map[int]string
}

func readAccounts() (accountDB, error) {
	db := accountDB{users: map[string]passwdEntry{}, groups: map[string]groupEntry{}, byGID: map[int]string{}}
	err := readColonFile("/etc/passwd", 7, func(f []string) {
		uid, _ := strconv.Atoi(f[2])
		gid, _ := strconv.Atoi(f[3])
		db.users[f[0]] = passwdEntry{name: f[0], uid: uid, gid: gid, gecos: f[4], home: f[5], shel: f[6], expire: -1,
			aging: passwordAging{-1, -1, -1, -1}}
	})
	if err != nil {
		return db, err
	}
	err = readColonFile("/etc/shadow", 8, func(f []string) {
		u, ok := db.users[f[0]]
		if !ok {
			return
		}
		u.hash, u.hasShadow = f[1], true
		u.expire = shadowDays(f[7])
		u.aging = passwordAging{min: shadowDays(f[3]), max: shadowDays(f[4]), warn: shadowDays(f[5]), inactive: shadowDays(f[6])}
		db.users[f[0]] = u
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return db, err
	}
	err = readColonFile("/etc/group", 4, func(f []string) {
		gid, _ := strconv.Atoi(f[2])
		var members []string
		if f[3] != "" {
			members = strings.Split(f[3], ",")
		}
		db.groups[f[0]] = groupEntry{name: f[0], gid: gid, members: members}
		if _, dup := db.byGID[gid]; !dup {
			db.byGID[gid] = f[0]
		}
	})
	return db, err
}

// shadowDays reads a day count of /etc/shadow; -1 when it is empty.
func shadowDays(f string) int64 {
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func readColonFile(path string, fields int, fn func([]string)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-") {
			continue
		}
		parts := strings.Split(line, ":")
		if len(parts) < fields {
			continue
		}
		fn(parts)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// nssHas reports whether NSS (getent) knows an account the local files do
// not have: a user or group of a directory service (LDAP, SSSD).
func nssHas(ctx context.Context, database, name string) bool {
	r, err := runCmd(ctx, nil, "getent", database, name)
	return err == nil && r.rc == 0 && strings.TrimSpace(r.stdout) != ""
}

// supplementary lists the groups that name the user as a member, sorted.
func (db accountDB) supplementary(user string) []string {
	var out []string
	for _, g := range db.groups {
		if slices.Contains(g.members, user) {
			out = append(out, g.name)
		}
	}
	slices.Sort(out)
	return out
}

// gidOf resolves a group name or numeric gid; ok is false for an unknown name.
func (db accountDB) gidOf(group string) (int, bool) {
	if n, err := strconv.Atoi(group); err == nil {
		return n, true
	}
	g, ok := db.groups[group]
	return g.gid, ok
}

// runAccountCmd runs a shadow-utils program. secret, when not empty, is
// replaced in the error (the argv of usermod -p holds the password hash).
func runAccountCmd(ctx context.Context, argv []string, secret string) error {
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return redactErr(err, secret)
	}
	if r.rc != 0 {
		return redactErr(cmdError(argv, r), secret)
	}
	return nil
}

func redactErr(err error, secret string) error {
	if len(secret) < 4 || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "(password)"))
}
