package core

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.user.present", module.Schema{
		Summary: "Ensure a user account exists with the given uid, groups, shell and home",
		Params: map[string]module.Param{
			"name":        str(true, "user name"),
			"uid":         typed(module.TypeInt, "numeric uid"),
			"group":       typed(module.TypeAny, "primary group name or gid"),
			"groups":      typed(module.TypeStrList, "supplementary groups: exactly these (or at least these with append)"),
			"append":      typed(module.TypeBool, "add the groups, keep other supplementary groups"),
			"shell":       str(false, "login shell"),
			"home":        str(false, "home directory (set in the account; an existing home is not moved)"),
			"system":      typed(module.TypeBool, "create a system account"),
			"create_home": typed(module.TypeBool, "create the home directory of a new user (default: true unless system)"),
		},
		Unconfinable: true,
	}, userPresent)
	register("core.group.present", module.Schema{
		Summary: "Ensure a group exists, with the given gid",
		Params: map[string]module.Param{
			"name":   str(true, "group name"),
			"gid":    typed(module.TypeInt, "numeric gid"),
			"system": typed(module.TypeBool, "create a system group"),
		},
		Unconfinable: true,
	}, groupPresent)
}

var accountNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$`)

type passwdEntry struct {
	name       string
	uid, gid   int
	home, shel string
}

type groupEntry struct {
	name    string
	gid     int
	members []string
}

// accountDB is /etc/passwd and /etc/group as read at one moment.
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
		db.users[f[0]] = passwdEntry{name: f[0], uid: uid, gid: gid, home: f[5], shel: f[6]}
	})
	if err != nil {
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

func runAccountCmd(ctx context.Context, argv []string) error {
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return err
	}
	if r.rc != 0 {
		return cmdError(argv, r)
	}
	return nil
}

func groupPresent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name, system := a.str("name"), a.boolean("system", false)
	gid, hasGID := a.integer("gid")
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
	var argv []string
	var diff string
	switch {
	case !exists:
		argv = []string{"groupadd"}
		diff = "+ group " + name
		if hasGID {
			argv = append(argv, "-g", strconv.FormatInt(gid, 10))
			diff += fmt.Sprintf(" gid %d", gid)
		}
		if system {
			argv = append(argv, "-r")
		}
		argv = append(argv, "--", name)
	case hasGID && int64(g.gid) != gid:
		argv = []string{"groupmod", "-g", strconv.FormatInt(gid, 10), "--", name}
		diff = fmt.Sprintf("group %s: gid %d -> %d", name, g.gid, gid)
	default:
		return converged("group "+name+" is in the wanted state", map[string]any{"name": name, "gid": int64(g.gid)}), nil
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff + "\n", Msg: "would change group " + name, Data: map[string]any{"name": name}}, nil
	}
	if err := runAccountCmd(ctx, argv); err != nil {
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

// userWant is the wanted state of an account; nil pointers are not managed.
type userWant struct {
	name          string
	uid           *int64
	group         string
	groups        []string
	manageGroups  bool
	append        bool
	shell, home   string
	system        bool
	createHome    bool
	groupsMissing []string
}

func userPresent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	w := userWant{name: a.str("name"), group: a.scalar("group"), groups: a.strList("groups"), manageGroups: a.has("groups"),
		append: a.boolean("append", false), shell: a.str("shell"), home: a.str("home"), system: a.boolean("system", false)}
	w.createHome = a.boolean("create_home", !w.system)
	if uid, ok := a.integer("uid"); ok {
		w.uid = &uid
	}
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if !accountNameRe.MatchString(w.name) {
		return domain.Result{}, fmt.Errorf("%q is not a valid user name", w.name)
	}
	db, err := readAccounts()
	if err != nil {
		return domain.Result{}, err
	}
	for _, g := range append(slices.Clone(w.groups), w.group) {
		if _, ok := db.gidOf(g); g != "" && !ok {
			if !env.Check {
				return domain.Result{}, fmt.Errorf("user %s: group %q does not exist (create it first with core.group.present)", w.name, g)
			}
			w.groupsMissing = append(w.groupsMissing, g)
		}
	}
	argv, diff := userCommand(db, w)
	if argv == nil {
		return converged("user "+w.name+" is in the wanted state", userData(db, w.name)), nil
	}
	if len(w.groupsMissing) > 0 {
		diff = append(diff, "(groups not existing yet: "+strings.Join(w.groupsMissing, ", ")+")")
	}
	diffText := strings.Join(diff, "\n") + "\n"
	if env.Check {
		return domain.Result{Changed: true, Diff: diffText, Msg: "would change user " + w.name, Data: map[string]any{"name": w.name}}, nil
	}
	if err := runAccountCmd(ctx, argv); err != nil {
		return domain.Result{}, fmt.Errorf("user %s: %w", w.name, err)
	}
	if db, err = readAccounts(); err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diffText, Msg: "changed user " + w.name, Data: userData(db, w.name)}
	if again, _ := userCommand(db, w); again != nil {
		res.Failed = true
		res.Msg = fmt.Sprintf("%s succeeded but user %s is still not in the wanted state", argv[0], w.name)
	}
	return res, nil
}

// userCommand returns the useradd or usermod call that converges the
// account, and the diff lines; nil when it is converged.
func userCommand(db accountDB, w userWant) ([]string, []string) {
	u, exists := db.users[w.name]
	if !exists {
		argv := []string{"useradd"}
		diff := "+ user " + w.name
		if w.uid != nil {
			argv = append(argv, "-u", strconv.FormatInt(*w.uid, 10))
			diff += fmt.Sprintf(" uid %d", *w.uid)
		}
		if w.group != "" {
			argv = append(argv, "-g", w.group)
		}
		if len(w.groups) > 0 {
			argv = append(argv, "-G", strings.Join(w.groups, ","))
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
		return append(argv, "--", w.name), []string{diff}
	}
	var argv, diff []string
	if w.uid != nil && int64(u.uid) != *w.uid {
		argv = append(argv, "-u", strconv.FormatInt(*w.uid, 10))
		diff = append(diff, fmt.Sprintf("uid %d -> %d", u.uid, *w.uid))
	}
	if w.group != "" {
		if gid, ok := db.gidOf(w.group); !ok || gid != u.gid {
			argv = append(argv, "-g", w.group)
			diff = append(diff, fmt.Sprintf("primary group %s -> %s", db.byGID[u.gid], w.group))
		}
	}
	if w.shell != "" && u.shel != w.shell {
		argv = append(argv, "-s", w.shell)
		diff = append(diff, fmt.Sprintf("shell %s -> %s", u.shel, w.shell))
	}
	if w.home != "" && u.home != w.home {
		argv = append(argv, "-d", w.home)
		diff = append(diff, fmt.Sprintf("home %s -> %s", u.home, w.home))
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
	if argv == nil {
		return nil, nil
	}
	for i := range diff {
		diff[i] = "user " + w.name + ": " + diff[i]
	}
	return append(append([]string{"usermod"}, argv...), "--", w.name), diff
}

func userData(db accountDB, name string) map[string]any {
	u, ok := db.users[name]
	if !ok {
		return map[string]any{"name": name}
	}
	return map[string]any{
		"name": name, "uid": int64(u.uid), "gid": int64(u.gid), "home": u.home, "shell": u.shel,
		"groups": toAnyList(db.supplementary(name)),
	}
}
