package core

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	userParams := map[string]module.Param{
		"name":                            str(true, "user name"),
		"uid":                             typed(module.TypeInt, "numeric uid"),
		"non_unique":                      typed(module.TypeBool, "with uid: allow a uid another account already has (useradd/usermod -o)"),
		"group":                           typed(module.TypeAny, "primary group name or gid"),
		"groups":                          typed(module.TypeStrList, "supplementary groups: exactly these (or at least these with append)"),
		"append":                          typed(module.TypeBool, "add the groups, keep other supplementary groups"),
		"comment":                         str(false, "the account's comment (GECOS field), e.g. the full name"),
		"shell":                           str(false, "login shell"),
		"home":                            str(false, "home directory (set in the account; an existing home is moved only with move_home)"),
		"move_home":                       typed(module.TypeBool, "when home changes, move the contents of the old home to the new one (usermod -m)"),
		"system":                          typed(module.TypeBool, "create a system account"),
		"create_home":                     typed(module.TypeBool, "create the home directory of a new user (default: true unless system); given true, also create the missing home of an existing user (from the skeleton, with pam's mkhomedir_helper)"),
		"password":                        userPasswordParam(),
		"update_password":                 choiceParam("always", "always: set password whenever the hash differs; on_create: only when the user is created", "always", "on_create"),
		"password_lock":                   typed(module.TypeBool, "true locks the password (usermod -L, a ! before the hash), false unlocks it; unset leaves it"),
		"expires":                         typed(module.TypeNumber, "account expiry as seconds since the epoch (compared by day, UTC); a negative value removes the expiry"),
		"password_expire_min":             typed(module.TypeInt, "minimum days between password changes (chage -m; -1 unsets)"),
		"password_expire_max":             typed(module.TypeInt, "maximum days a password is valid (chage -M; -1 unsets)"),
		"password_expire_warn":            typed(module.TypeInt, "days of warning before the password expires (chage -W; -1 unsets)"),
		"password_expire_account_disable": typed(module.TypeInt, "days after the password expired until the account is disabled (chage -I; -1 unsets)"),
		"skeleton":                        str(false, "with a new home: the directory whose files are copied into it (useradd -k; default /etc/skel)"),
		"umask":                           str(false, "with a new home: the umask it is created with (useradd -K UMASK=…), e.g. 077"),
		"uid_min":                         typed(module.TypeInt, "the smallest uid chosen for a new account (useradd -K UID_MIN=…)"),
		"uid_max":                         typed(module.TypeInt, "the largest uid chosen for a new account (useradd -K UID_MAX=…)"),
		"local":                           typed(module.TypeBool, "look the account up in /etc/passwd and /etc/group only, ignoring NSS (LDAP, SSSD); without it a user only NSS knows is an error"),
		"state":                           choiceParam("present", "present, or absent (as core.user.absent)", "present", "absent"),
		"remove":                          typed(module.TypeBool, "with state absent: also remove the home directory and mail spool (userdel -r)"),
		"force":                           typed(module.TypeBool, "with state absent: remove the user even while logged in, and with remove the home even if another user owns files in it (userdel -f)"),
	}
	userOut := maps.Clone(coreOutputs["core.user.present"])
	userOut["comment"] = outputField(module.TypeString, "the comment (GECOS) field")
	nameOut := map[string]module.Field{"name": outputField(module.TypeString, "the account name")}
	registerNamed("core.user.present", module.Schema{
		Summary:      "Ensure a user account exists with the given uid, groups, shell, home, password and expiry (or, with state: absent, does not exist)",
		Params:       userParams,
		Output:       userOut,
		Unconfinable: true,
	}, userPresent)
	registerNamed("core.user.absent", module.Schema{
		Summary: "Ensure a user account does not exist; with remove, its home and mail spool go too",
		Params: map[string]module.Param{
			"name":   userParams["name"],
			"remove": typed(module.TypeBool, "also remove the home directory and mail spool (userdel -r)"),
			"force":  userParams["force"],
			"local":  userParams["local"],
		},
		Output:       nameOut,
		Unconfinable: true,
	}, userAbsent)
	registerNamed("core.group.present", module.Schema{
		Summary: "Ensure a group exists, with the given gid (or, with state: absent, does not exist)",
		Params: map[string]module.Param{
			"name":       str(true, "group name"),
			"gid":        typed(module.TypeInt, "numeric gid"),
			"non_unique": typed(module.TypeBool, "with gid: allow a gid another group already has (groupadd/groupmod -o)"),
			"system":     typed(module.TypeBool, "create a system group"),
			"gid_min":    typed(module.TypeInt, "the smallest gid chosen for a new group (groupadd -K GID_MIN=…)"),
			"gid_max":    typed(module.TypeInt, "the largest gid chosen for a new group (groupadd -K GID_MAX=…)"),
			"local":      typed(module.TypeBool, "look the group up in /etc/group only, ignoring NSS (LDAP, SSSD); without it a group only NSS knows is an error"),
			"state":      choiceParam("present", "present, or absent (as core.group.absent)", "present", "absent"),
			"force":      typed(module.TypeBool, "with state absent: remove the group even if it is the primary group of a user (groupdel -f)"),
		},
		Unconfinable: true,
	}, groupPresent)
	registerNamed("core.group.absent", module.Schema{
		Summary: "Ensure a group does not exist",
		Params: map[string]module.Param{
			"name":  str(true, "group name"),
			"force": typed(module.TypeBool, "remove the group even if it is the primary group of a user (groupdel -f)"),
			"local": typed(module.TypeBool, "look the group up in /etc/group only, ignoring NSS (LDAP, SSSD)"),
		},
		Output:       nameOut,
		Unconfinable: true,
	}, groupAbsent)
}

// choiceParam is a string param with a default that must be one of values.
func choiceParam(def, desc string, values ...string) module.Param {
	p := module.Param{Type: module.TypeString, Default: def, Description: desc}
	p.Check = func(s string) error {
		if !slices.Contains(values, s) {
			return fmt.Errorf("%q: want %s", s, strings.Join(values, " or "))
		}
		return nil
	}
	return p
}

// cryptHashRe matches what crypt(3) writes to /etc/shadow: $id$…, a
// 13-character DES hash, or a disabled password (! or * first).
var cryptHashRe = regexp.MustCompile(`^(\$[0-9a-z]+\$[^:\s]+|[./0-9A-Za-z]{13}|[!*][^:\s]*)$`)

func userPasswordParam() module.Param {
	p := str(false, "the password as a crypt(3) hash, as /etc/shadow holds it (e.g. from mkpasswd -m sha-512); never shown in results or diffs")
	p.Check = checkPasswordHash
	return p
}

// checkPasswordHash refuses a value that is not a crypt hash; the error
// never repeats the value, which may be a clear-text password.
func checkPasswordHash(s string) error {
	if !cryptHashRe.MatchString(s) {
		return fmt.Errorf("not a crypt(3) hash (want $6$… or $y$… as mkpasswd makes, or ! / * for a disabled password); a clear-text password is never accepted")
	}
	return nil
}

var accountNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$`)

// stateOf reads the state param (present or absent).
func stateOf(a *args) (string, error) {
	s := a.str("state")
	switch s {
	case "", "present":
		return "present", a.err
	case "absent":
		return s, a.err
	}
	return "", paramErr("state", "%q: want present or absent", s)
}

func groupPresent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	state, err := stateOf(a)
	if err != nil {
		return domain.Result{}, err
	}
	if state == "absent" {
		return groupAbsent(ctx, p, env)
	}
	name, system, nonUnique, local := a.str("name"), a.boolean("system", false), a.boolean("non_unique", false), a.boolean("local", false)
	gid, hasGID := a.integer("gid")
	gidMin, hasMin := a.integer("gid_min")
	gidMax, hasMax := a.integer("gid_max")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if !accountNameRe.MatchString(name) {
		return domain.Result{}, fmt.Errorf("%q is not a valid group name", name)
	}
	if nonUnique && !hasGID {
		return domain.Result{}, paramErr("non_unique", "needs gid")
	}
	db, err := readAccounts()
	if err != nil {
		return domain.Result{}, err
	}
	g, exists := db.groups[name]
	if !exists && !local && nssHas(ctx, "group", name) {
		return domain.Result{}, fmt.Errorf("group %s is known to NSS (getent) but not in /etc/group: it belongs to a directory service, which groupadd/groupmod do not manage (set local: true to manage a local group of that name)", name)
	}
	var argv []string
	var diff string
	switch {
	case !exists:
		argv = []string{"groupadd"}
		diff = "+ group " + name
		if hasGID {
			argv = append(argv, "-g", fmt.Sprint(gid))
			diff += fmt.Sprintf(" gid %d", gid)
			if nonUnique {
				argv = append(argv, "-o")
			}
		}
		if system {
			argv = append(argv, "-r")
		}
		if hasMin {
			argv = append(argv, "-K", fmt.Sprintf("GID_MIN=%d", gidMin))
		}
		if hasMax {
			argv = append(argv, "-K", fmt.Sprintf("GID_MAX=%d", gidMax))
		}
		argv = append(argv, "--", name)
	case hasGID && int64(g.gid) != gid:
		argv = []string{"groupmod", "-g", fmt.Sprint(gid)}
		if nonUnique {
			argv = append(argv, "-o")
		}
		argv = append(argv, "--", name)
		diff = fmt.Sprintf("group %s: gid %d -> %d", name, g.gid, gid)
	default:
		return converged("group "+name+" is in the wanted state", map[string]any{"name": name, "gid": int64(g.gid)}), nil
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff + "\n", Msg: "would change group " + name, Data: map[string]any{"name": name}}, nil
	}
	if err := runAccountCmd(ctx, argv, ""); err != nil {
		return domain.Result{}, fmt.Errorf("group %s: %w", name, err)
	}
	if db, err = readAccounts(); err != nil {
		return domain.Result{}, err
	}
	g, ok := db.groups[name]
	res := domain.Result{Changed: true, Diff: diff + "\n", Msg: "changed group " + name, Data: map[string]any{"name": name, "gid": int64(g.gid)}}
	if !ok || (hasGID && int64(g.gid) != gid) {
		res.Failed = true
		res.Msg = fmt.Sprintf("%s succeeded but group %s is not in the wanted state", argv[0], name)
	}
	return res, nil
}

func userPresent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	state, err := stateOf(a)
	if err != nil {
		return domain.Result{}, err
	}
	if state == "absent" {
		return userAbsent(ctx, p, env)
	}
	w, err := parseUserWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	db, err := readAccounts()
	if err != nil {
		return domain.Result{}, err
	}
	if _, ok := db.users[w.name]; !ok && !w.local && nssHas(ctx, "passwd", w.name) {
		return domain.Result{}, fmt.Errorf("user %s is known to NSS (getent) but not in /etc/passwd: it belongs to a directory service, which useradd/usermod do not manage (set local: true to manage a local account of that name)", w.name)
	}
	for _, g := range append(slices.Clone(w.groups), w.group) {
		if _, ok := db.gidOf(g); g != "" && !ok && (w.local || !nssHas(ctx, "group", g)) {
			if !env.Check {
				return domain.Result{}, fmt.Errorf("user %s: group %q does not exist (create it first with core.group.present)", w.name, g)
			}
			w.groupsMissing = append(w.groupsMissing, g)
		}
	}
	u, exists := db.users[w.name]
	argv, diff := userCommand(db, w)
	chage, chageDiff := chageCommand(u, exists, w)
	home := homeToCreate(u, exists, w)
	if argv == nil && chage == nil && home == "" {
		return converged("user "+w.name+" is in the wanted state", userData(db, w.name)), nil
	}
	diff = append(diff, chageDiff...)
	if home != "" {
		diff = append(diff, fmt.Sprintf("user %s: create home %s", w.name, home))
	}
	if len(w.groupsMissing) > 0 {
		diff = append(diff, "(groups not existing yet: "+strings.Join(w.groupsMissing, ", ")+")")
	}
	diffText := strings.Join(diff, "\n") + "\n"
	if env.Check {
		return domain.Result{Changed: true, Diff: diffText, Msg: "would change user " + w.name, Data: map[string]any{"name": w.name}}, nil
	}
	if argv != nil {
		if err := runAccountCmd(ctx, argv, w.password); err != nil {
			return domain.Result{}, fmt.Errorf("user %s: %w", w.name, err)
		}
		if db, err = readAccounts(); err != nil {
			return domain.Result{}, err
		}
		// A new account's aging comes from login.defs: compare again.
		chage, _ = chageCommand(db.users[w.name], true, w)
	}
	if chage != nil {
		if err := runAccountCmd(ctx, chage, ""); err != nil {
			return domain.Result{}, fmt.Errorf("user %s: %w", w.name, err)
		}
		if db, err = readAccounts(); err != nil {
			return domain.Result{}, err
		}
	}
	if homeToCreate(db.users[w.name], true, w) != "" {
		if err := runAccountCmd(ctx, mkhomeCommand(w), ""); err != nil {
			return domain.Result{}, fmt.Errorf("user %s: creating the home: %w", w.name, err)
		}
	}
	res := domain.Result{Changed: true, Diff: diffText, Msg: "changed user " + w.name, Data: userData(db, w.name)}
	// The diff, never argv, says what is still off: argv may hold the hash.
	again, againDiff := userCommand(db, w)
	againChage, againChageDiff := chageCommand(db.users[w.name], true, w)
	if h := homeToCreate(db.users[w.name], true, w); h != "" {
		againDiff = append(againDiff, "home "+h+" still missing")
	}
	if again != nil || againChage != nil || len(againDiff) > 0 {
		res.Failed = true
		res.Msg = fmt.Sprintf("user %s is still not in the wanted state: %s", w.name, strings.Join(append(againDiff, againChageDiff...), "; "))
	}
	return res, nil
}

func userData(db accountDB, name string) map[string]any {
	u, ok := db.users[name]
	if !ok {
		return map[string]any{"name": name}
	}
	return map[string]any{
		"name": name, "uid": int64(u.uid), "gid": int64(u.gid), "home": u.home, "shell": u.shel,
		"comment": u.gecos, "groups": toAnyList(db.supplementary(name)),
	}
}
