package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	sched := str(false, `five-field spec ("*/5 * * * *") or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @reboot); required unless state is absent, special_time is given or env is true`)
	sched.Check = checkCronSchedule
	name := str(true, "the job's file name under /etc/cron.d (letters, digits, _ and -: cron skips names with dots); with crontab: true the entry's name in the user's crontab (its \"#Soul Stack: <name>\" marker line), or with env: true the variable's name")
	name.Check = checkCronEntryName
	special := choiceParam("", "a descriptor instead of schedule, as Ansible's special_time: annually, daily, hourly, monthly, reboot, weekly or yearly", "annually", "daily", "hourly", "monthly", "reboot", "weekly", "yearly")
	special.Default = nil
	registerNamed("core.cron.present", module.Schema{
		Summary: "Ensure a cron job in its own /etc/cron.d file (five-field schedule or @daily-style descriptor), or an entry of a user's crontab (crontab: true), or its absence",
		Params: map[string]module.Param{
			"name":         name,
			"schedule":     sched,
			"special_time": special,
			"minute":       typed(module.TypeAny, `the schedule's minute field, as Ansible's cron (0-59, *, */5, …; default *); instead of schedule`),
			"hour":         typed(module.TypeAny, "the schedule's hour field (0-23, *, …; default *); instead of schedule"),
			"day":          typed(module.TypeAny, "the schedule's day-of-month field (1-31, *, …; default *); instead of schedule"),
			"month":        typed(module.TypeAny, "the schedule's month field (1-12, *, …; default *); instead of schedule"),
			"weekday":      typed(module.TypeAny, "the schedule's day-of-week field (0-6 for Sunday-Saturday, *, …; default *); instead of schedule"),
			"job":          str(false, "the command line (with env: true, the variable's value); required unless state is absent"),
			"user":         {Type: module.TypeString, Default: "root", Description: "user the job runs as; with crontab: true, whose crontab is edited"},
			"crontab":      {Type: module.TypeBool, Default: false, Description: "edit the user's own crontab (crontab -u user) instead of writing /etc/cron.d/<name>; an entry Ansible wrote (\"#Ansible: <name>\") is adopted and its marker rewritten"},
			"env":          typed(module.TypeAny, "a map: environment lines written before the job (NAME: value), e.g. MAILTO, in the /etc/cron.d file only; true (with crontab: true): the entry is the variable line name=job, as Ansible's env: true"),
			"disabled":     {Type: module.TypeBool, Default: false, Description: "write the job commented out (# before the schedule), so cron does not run it"},
			"state":        {Type: module.TypeString, Default: "present", Description: "present or absent"},
		},
		Output: map[string]module.Field{
			"path":     outputField(module.TypeString, "the /etc/cron.d file; empty with crontab: true"),
			"crontab":  outputField(module.TypeString, "the user whose crontab holds the entry; empty for an /etc/cron.d file"),
			"schedule": outputField(module.TypeString, "the schedule as written"),
			"state":    outputField(module.TypeString, "present or absent"),
		},
		Example: `- name: Nightly backup
  module: core.cron.present
  params:
    name: backup
    schedule: "30 2 * * *"
    user: root
    job: /usr/local/bin/backup --quiet
    env: {MAILTO: ops@example.com}
`,
	}, cronPresent)
}

// cronFieldNames are Ansible's five schedule params, in schedule order.
var cronFieldNames = []string{"minute", "hour", "day", "month", "weekday"}

var (
	cronNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	cronEnvRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	cronUserRe = regexp.MustCompile(`^[a-z_][a-z0-9_.-]*\$?$`)
	// cronParser accepts what Vixie cron and cronie accept in /etc/cron.d.
	cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
)

// checkCronSchedule validates a schedule with robfig/cron's parser;
// @reboot, which cron knows but the parser does not, passes as is.
func checkCronSchedule(s string) error {
	if s == "@reboot" {
		return nil
	}
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		// robfig/cron panics on "TZ=UTC\t…"; cron.d takes CRON_TZ as a
		// variable line, not in the schedule.
		return fmt.Errorf("%q: a time zone is not part of a cron.d schedule (set CRON_TZ in env:)", s)
	}
	if strings.HasPrefix(s, "@every") {
		return fmt.Errorf("%q: @every is not understood by cron", s)
	}
	if !strings.HasPrefix(s, "@") && len(strings.Fields(s)) != 5 {
		return fmt.Errorf("%q: want five fields (minute hour day-of-month month day-of-week) or a descriptor such as @daily", s)
	}
	if _, err := cronParser.Parse(s); err != nil {
		return fmt.Errorf("%q is not a valid cron schedule: %v", s, err)
	}
	return nil
}

func checkCronName(n string) error {
	if !cronNameRe.MatchString(n) {
		return fmt.Errorf("%q: letters, digits, _ and - only (cron ignores files with other characters)", n)
	}
	return nil
}

// checkCronEntryName accepts one line: a crontab entry's name is free
// text, and the stricter rule of a cron.d file name (checkCronName) is
// checked when the module runs, where crontab is known.
func checkCronEntryName(n string) error {
	if strings.TrimSpace(n) == "" || strings.ContainsAny(n, "\n\r") {
		return fmt.Errorf("must be one non-empty line")
	}
	return nil
}

// cronCall is one core.cron.present call, decoded.
type cronCall struct {
	name, sched, job, user, state string
	crontab, disabled, envEntry   bool
	vars                          map[string]string
}

func parseCronCall(a *args) (cronCall, error) {
	c := cronCall{name: a.str("name"), sched: strings.TrimSpace(a.str("schedule")), job: a.str("job"), user: a.str("user"),
		state: a.str("state"), crontab: a.boolean("crontab", false), disabled: a.boolean("disabled", false)}
	special := a.str("special_time")
	var fields []string
	given := false
	for _, k := range cronFieldNames {
		f := a.scalar(k)
		if f == "" {
			f = "*"
		} else {
			given = true
		}
		fields = append(fields, f)
	}
	switch v := a.p["env"].(type) {
	case nil:
	case bool:
		c.envEntry = v
	default:
		c.vars = a.strMap("env")
	}
	if a.err != nil {
		return c, a.err
	}
	if c.state == "" {
		c.state = "present"
	}
	if c.state != "present" && c.state != "absent" {
		return c, paramErr("state", "%q: want present or absent", c.state)
	}
	if err := checkCronEntryName(c.name); err != nil {
		return c, paramErr("name", "%v", err)
	}
	if c.user == "" {
		c.user = "root"
	}
	if !cronUserRe.MatchString(c.user) {
		return c, paramErr("user", "%q is not a valid user name", c.user)
	}
	if !c.crontab {
		if err := checkCronName(c.name); err != nil {
			return c, paramErr("name", "%v", err)
		}
		if c.envEntry {
			return c, paramErr("env", "true (a variable entry) needs crontab: true; in an /etc/cron.d file give env as a map of the job's variables")
		}
	} else if c.vars != nil {
		return c, paramErr("env", "a map is for /etc/cron.d files; in a crontab make each variable its own entry (name: VAR, env: true, job: value)")
	}
	if c.envEntry && !cronEnvRe.MatchString(c.name) {
		return c, paramErr("name", "%q: a variable name is letters, digits and _", c.name)
	}
	if c.state == "absent" {
		return c, nil
	}
	if strings.ContainsAny(c.job, "\n\r") || !c.envEntry && strings.TrimSpace(c.job) == "" {
		return c, paramErr("job", "must be one non-empty line")
	}
	if c.envEntry {
		if c.sched != "" || special != "" || given || c.disabled {
			return c, paramErr("env", "a variable entry takes no schedule, special_time or disabled")
		}
		return c, nil
	}
	if given {
		if c.sched != "" || special != "" {
			return c, paramErr("schedule", "give schedule, special_time or the fields minute, hour, day, month and weekday, not two of them")
		}
		c.sched = strings.Join(fields, " ")
		if len(strings.Fields(c.sched)) != 5 {
			return c, paramErr("minute", "%q: each of minute, hour, day, month and weekday is one field without spaces", c.sched)
		}
	}
	if special != "" {
		if c.sched != "" {
			return c, paramErr("special_time", "give schedule or special_time, not both")
		}
		c.sched = "@" + special
	}
	if c.sched == "" {
		return c, paramErr("schedule", "required when state is present (or give special_time, or minute, hour, day, month and weekday)")
	}
	if err := checkCronSchedule(c.sched); err != nil {
		return c, paramErr("schedule", "%v", err)
	}
	return c, nil
}

func cronPresent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	c, err := parseCronCall(newArgs(p))
	if err != nil {
		return domain.Result{}, err
	}
	if c.crontab {
		return crontabPresent(ctx, env, c)
	}
	file := path.Join("/etc/cron.d", c.name)
	if c.state == "absent" {
		return cronAbsent(env, file)
	}
	var b strings.Builder
	b.WriteString("# Managed by Soul Stack (core.cron.present " + c.name + "); local changes are overwritten.\n")
	for _, k := range sortedKeys(c.vars) {
		if !cronEnvRe.MatchString(k) || strings.ContainsAny(c.vars[k], "\n\r") {
			return domain.Result{}, paramErr("env", "%q: names are letters, digits and _, values one line", k)
		}
		fmt.Fprintf(&b, "%s=%s\n", k, c.vars[k])
	}
	if c.disabled {
		b.WriteString("#")
	}
	fmt.Fprintf(&b, "%s %s %s\n", c.sched, c.user, c.job)
	data := map[string]any{"path": file, "crontab": "", "schedule": c.sched, "state": "present"}
	// /etc/cron.d comes with cron: a missing directory means cron is not
	// installed (yet), which creating the directory would only hide.
	if missing, err := cronDirMissing(env); err != nil {
		return domain.Result{}, err
	} else if missing {
		if !env.Check {
			return domain.Result{}, fmt.Errorf("/etc/cron.d does not exist: install cron first (core.pkg.installed name: cron, or cronie on the RedHat family)")
		}
		diff := unifiedDiff("/dev/null", file, nil, []byte(b.String())) + "(/etc/cron.d does not exist yet: cron must be installed first)\n"
		return domain.Result{Changed: true, Diff: diff, Msg: "would create " + file + " once cron is installed", Data: data}, nil
	}
	w := fileWant{path: file, content: []byte(b.String()), hasContent: true, mode: 0o644, hasMode: true, uid: 0, gid: 0}
	res, err := ensureFile(ctx, env, w)
	if err != nil {
		return domain.Result{}, err
	}
	res.Data = data
	return res, nil
}

// cronDirMissing reports whether /etc/cron.d does not exist.
func cronDirMissing(env *module.Env) (bool, error) {
	t, err := fsOf(env).Open("/etc/cron.d", safefs.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer t.Close()
	_, exists, err := t.Lstat()
	return !exists, err
}

// cronAbsent removes the job's file.
func cronAbsent(env *module.Env, file string) (domain.Result, error) {
	data := map[string]any{"path": file, "crontab": "", "schedule": "", "state": "absent"}
	t, err := fsOf(env).Open(file, safefs.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return converged(file+" does not exist", data), nil
	}
	if err != nil {
		return domain.Result{}, err
	}
	defer t.Close()
	fi, exists, err := t.Lstat()
	if err != nil {
		return domain.Result{}, err
	}
	if !exists {
		return converged(file+" does not exist", data), nil
	}
	if !fi.IsRegular() && !fi.IsSymlink() {
		return domain.Result{}, fmt.Errorf("%s is not a regular file (%s)", file, describeKind(fi))
	}
	diff := fmt.Sprintf("remove %s\n", file)
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have removed " + file, Data: data}, nil
	}
	if err := t.Remove(); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "removed " + file, Data: data}, nil
}
