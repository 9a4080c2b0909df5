package core

import (
	"context"
	"fmt"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// userAbsent removes an account (userdel), with remove its home and mail
// spool too (-r), with force even while the user is logged in (-f).
func userAbsent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name, remove, force, local := a.str("name"), a.boolean("remove", false), a.boolean("force", false), a.boolean("local", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if !accountNameRe.MatchString(name) {
		return domain.Result{}, fmt.Errorf("%q is not a valid user name", name)
	}
	db, err := readAccounts()
	if err != nil {
		return domain.Result{}, err
	}
	u, exists := db.users[name]
	data := map[string]any{"name": name}
	if !exists {
		if !local && nssHas(ctx, "passwd", name) {
			return domain.Result{}, fmt.Errorf("user %s is known to NSS (getent) but not in /etc/passwd: it belongs to a directory service, which userdel does not manage (set local: true to only make sure there is no local account of that name)", name)
		}
		return converged("user "+name+" does not exist", data), nil
	}
	argv := []string{"userdel"}
	diff := fmt.Sprintf("- user %s uid %d", name, u.uid)
	if remove {
		argv = append(argv, "-r")
		diff += fmt.Sprintf(" (home %s and mail spool removed)", u.home)
	}
	if force {
		argv = append(argv, "-f")
	}
	argv = append(argv, "--", name)
	if env.Check {
		return domain.Result{Changed: true, Diff: diff + "\n", Msg: "would remove user " + name, Data: data}, nil
	}
	if err := runAccountCmd(ctx, argv, ""); err != nil {
		return domain.Result{}, fmt.Errorf("user %s: %w", name, err)
	}
	if db, err = readAccounts(); err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diff + "\n", Msg: "removed user " + name, Data: data}
	if _, still := db.users[name]; still {
		res.Failed, res.Msg = true, "userdel succeeded but user "+name+" still exists"
	}
	return res, nil
}

// groupAbsent removes a group (groupdel), with force even when it is the
// primary group of a user (-f).
func groupAbsent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name, force, local := a.str("name"), a.boolean("force", false), a.boolean("local", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if !accountNameRe.MatchString(name) {
		return domain.Result{}, fmt.Errorf("%q is not a valid group name", name)
	}
	db, err := readAccounts()
	if err != nil {
		return domain.Result{}, err
	}
	g, exists := db.groups[name]
	data := map[string]any{"name": name}
	if !exists {
		if !local && nssHas(ctx, "group", name) {
			return domain.Result{}, fmt.Errorf("group %s is known to NSS (getent) but not in /etc/group: it belongs to a directory service, which groupdel does not manage (set local: true to only make sure there is no local group of that name)", name)
		}
		return converged("group "+name+" does not exist", data), nil
	}
	argv := []string{"groupdel"}
	if force {
		argv = append(argv, "-f")
	}
	argv = append(argv, "--", name)
	diff := fmt.Sprintf("- group %s gid %d\n", name, g.gid)
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would remove group " + name, Data: data}, nil
	}
	if err := runAccountCmd(ctx, argv, ""); err != nil {
		return domain.Result{}, fmt.Errorf("group %s: %w", name, err)
	}
	if db, err = readAccounts(); err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diff, Msg: "removed group " + name, Data: data}
	if _, still := db.groups[name]; still {
		res.Failed, res.Msg = true, "groupdel succeeded but group "+name+" still exists"
	}
	return res, nil
}
