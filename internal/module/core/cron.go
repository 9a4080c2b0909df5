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
	sched := str(false, `five-field spec ("*/5 * * * *") or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @reboot); required unless state is absent`)
	sched.Check = checkCronSchedule
	name := str(true, "the job's file name under /etc/cron.d (letters, digits, _ and -: cron skips names with dots)")
	name.Check = checkCronName
	registerNamed("core.cron.present", module.Schema{
		Summary: "Ensure a cron job in its own /etc/cron.d file (five-field schedule or @daily-style descriptor), or its absence",
		Params: map[string]module.Param{
			"name":     name,
			"schedule": sched,
			"job":      str(false, "the command line; required unless state is absent"),
			"user":     {Type: module.TypeString, Default: "root", Description: "user the job runs as"},
			"env":      typed(module.TypeMap, "environment lines written before the job (NAME: value), e.g. MAILTO"),
			"state":    {Type: module.TypeString, Default: "present", Description: "present or absent"},
		},
		Output: map[string]module.Field{
			"path":     fileOutput["path"],
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

func cronPresent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name, sched, job, user, state := a.str("name"), strings.TrimSpace(a.str("schedule")), a.str("job"), a.str("user"), a.str("state")
	vars := a.strMap("env")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if err := checkCronName(name); err != nil {
		return domain.Result{}, paramErr("name", "%v", err)
	}
	file := path.Join("/etc/cron.d", name)
	switch state {
	case "absent":
		return cronAbsent(env, file)
	case "present", "":
	default:
		return domain.Result{}, paramErr("state", "%q: want present or absent", state)
	}
	if sched == "" {
		return domain.Result{}, paramErr("schedule", "required when state is present")
	}
	if err := checkCronSchedule(sched); err != nil {
		return domain.Result{}, paramErr("schedule", "%v", err)
	}
	if strings.TrimSpace(job) == "" || strings.ContainsAny(job, "\n\r") {
		return domain.Result{}, paramErr("job", "must be one non-empty line")
	}
	if user == "" {
		user = "root"
	}
	if !cronUserRe.MatchString(user) {
		return domain.Result{}, paramErr("user", "%q is not a valid user name", user)
	}
	var b strings.Builder
	b.WriteString("# Managed by Soul Stack (core.cron.present " + name + "); local changes are overwritten.\n")
	for _, k := range sortedKeys(vars) {
		if !cronEnvRe.MatchString(k) || strings.ContainsAny(vars[k], "\n\r") {
			return domain.Result{}, paramErr("env", "%q: names are letters, digits and _, values one line", k)
		}
		fmt.Fprintf(&b, "%s=%s\n", k, vars[k])
	}
	fmt.Fprintf(&b, "%s %s %s\n", sched, user, job)
	w := fileWant{path: file, content: []byte(b.String()), hasContent: true, mode: 0o644, hasMode: true, uid: 0, gid: 0}
	res, err := ensureFile(ctx, env, w)
	if err != nil {
		return domain.Result{}, err
	}
	res.Data = map[string]any{"path": file, "schedule": sched, "state": "present"}
	return res, nil
}

// cronAbsent removes the job's file.
func cronAbsent(env *module.Env, file string) (domain.Result, error) {
	data := map[string]any{"path": file, "schedule": "", "state": "absent"}
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
