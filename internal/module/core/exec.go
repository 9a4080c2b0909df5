package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.exec.run", module.Schema{
		Summary: "Run a program (cmd with args, no shell) or a command line (command, via /bin/sh -c)",
		Params: map[string]module.Param{
			"command":     str(false, "command line run by /bin/sh -c; quote interpolated values: ${ shquote(input.x) }"),
			"cmd":         str(false, "program to run with args as argv, no shell"),
			"args":        typed(module.TypeStrList, "argv after cmd"),
			"env":         typed(module.TypeMap, "extra environment variables"),
			"cwd":         str(false, "working directory (absolute)"),
			"stdin":       str(false, "data written to stdin"),
			"become_user": becomeUserParam,
		},
		ExactlyOne:  [][]string{{"command", "cmd"}},
		RunsProgram: true,
	}, execRun)
	register("core.cmd.shell", module.Schema{
		Summary: "Run a command line through /bin/sh -c",
		Params: map[string]module.Param{
			"cmd":         str(true, "command line run by /bin/sh -c; quote interpolated values: ${ shquote(input.x) }"),
			"env":         typed(module.TypeMap, "extra environment variables"),
			"cwd":         str(false, "working directory (absolute)"),
			"stdin":       str(false, "data written to stdin"),
			"become_user": becomeUserParam,
		},
		RunsProgram: true,
	}, cmdShell)
}

// command is one core.exec.run or core.cmd.shell call.
type command struct {
	argv    []string
	display string
	env     map[string]string
	cwd     string
	stdin   *string
	user    string // become_user
}

var becomeUserParam = str(false, "run as this user (Ansible's become_user with become: true): the user's uid, primary and supplementary groups, and HOME, USER, LOGNAME and SHELL from the host's user database; the soul must run as root")

func execRun(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	c := command{env: a.strMap("env"), cwd: a.str("cwd"), user: a.str("become_user")}
	line, prog, argv := a.str("command"), a.str("cmd"), a.strList("args")
	if a.has("stdin") {
		s := a.str("stdin")
		c.stdin = &s
	}
	if a.err != nil {
		return domain.Result{}, a.err
	}
	switch {
	case line != "" && prog != "":
		return domain.Result{}, errors.New("give either command (a shell command line) or cmd (a program with args), not both")
	case line != "":
		if a.has("args") {
			return domain.Result{}, errors.New("args goes with cmd; with command, put the arguments in the command line")
		}
		c.argv, c.display = []string{"/bin/sh", "-c", line}, line
	case prog != "":
		c.argv = append([]string{prog}, argv...)
		c.display = quoteArgv(c.argv)
	default:
		return domain.Result{}, errors.New("command or cmd must be a non-empty string")
	}
	return runCommand(ctx, env, c)
}

func cmdShell(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	line := a.str("cmd")
	c := command{env: a.strMap("env"), cwd: a.str("cwd"), argv: []string{"/bin/sh", "-c", line}, display: line, user: a.str("become_user")}
	if a.has("stdin") {
		s := a.str("stdin")
		c.stdin = &s
	}
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if line == "" {
		return domain.Result{}, errors.New("cmd must be a non-empty command line")
	}
	return runCommand(ctx, env, c)
}

// runCommand runs c and maps the process result onto a module result. In
// check mode nothing runs: the executor calls with Check=false for the
// read-only probes (changed_when: false) that must run anyway.
func runCommand(ctx context.Context, env *module.Env, c command) (domain.Result, error) {
	data := map[string]any{"cmd": c.display}
	if env.Check {
		return domain.Result{Skipped: true, Msg: "skipped in check mode", Data: data}, nil
	}
	dir, err := commandDir(env, c.cwd)
	if err != nil {
		return domain.Result{}, err
	}
	spec := procSpec{argv: c.argv, env: c.env, dir: dir, stdin: c.stdin}
	if c.user != "" {
		data["become_user"] = c.user
		if err := becomeUser(env, &spec, c.user); err != nil {
			return domain.Result{}, err
		}
	}
	r, err := runProc(ctx, spec)
	if err != nil {
		return domain.Result{Failed: true, RC: r.rc, Msg: err.Error(), Data: data}, nil
	}
	// Like Ansible's command module, trailing line breaks are dropped so a
	// probe compares cleanly: register.role.stdout == 'slave'.
	stdout, stderr := strings.TrimRight(r.stdout, "\r\n"), strings.TrimRight(r.stderr, "\r\n")
	data["stdout_lines"] = lines(stdout)
	res := domain.Result{Changed: true, RC: r.rc, Stdout: stdout, Stderr: stderr, Data: data}
	var notes []string
	switch {
	case r.killed:
		res.Failed = true
		why := "its context ended"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "it timed out"
		} else if errors.Is(ctx.Err(), context.Canceled) {
			why = "it was cancelled"
		}
		notes = append(notes, "command killed (with its whole process group) because "+why)
	case r.rc != 0:
		res.Failed = true
		msg := "command exited with rc " + strconv.Itoa(r.rc)
		if r.note != "" {
			msg = "command " + r.note
		}
		if last := lastLine(r.stderr); last != "" {
			msg += ": " + last
		}
		notes = append(notes, msg)
	case r.note != "":
		notes = append(notes, r.note)
	}
	if r.truncated {
		notes = append(notes, fmt.Sprintf("output truncated to %d bytes per stream", outputCap))
	}
	res.Msg = strings.Join(notes, "; ")
	return res, nil
}

// becomeUser makes spec run as the user name: its uid, primary and
// supplementary groups, and its login environment (which env: may still
// override). The default working directory is the user's home, as with
// Ansible's become (sudo -H), when it exists.
func becomeUser(env *module.Env, spec *procSpec, name string) error {
	if env.Root != "" {
		return paramErr("become_user", "needs a soul running on the host itself, not confined under a root directory")
	}
	if os.Geteuid() != 0 {
		return paramErr("become_user", "needs the soul to run as root")
	}
	u, err := user.Lookup(name)
	if err != nil {
		return paramErr("become_user", "%v", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return paramErr("become_user", "user %s: %v", name, err)
	}
	gids, err := u.GroupIds()
	if err != nil {
		return paramErr("become_user", "groups of %s: %v", name, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			cred.Groups = append(cred.Groups, uint32(n))
		}
	}
	spec.cred = cred
	login := map[string]string{"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username, "SHELL": loginShell(u.Username)}
	for k, v := range spec.env {
		login[k] = v
	}
	spec.env = login
	if spec.dir == "" {
		if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() {
			spec.dir = u.HomeDir
		}
	}
	return nil
}

// loginShell is the user's shell from /etc/passwd (/bin/sh when unknown).
func loginShell(name string) string {
	b, err := os.ReadFile("/etc/passwd")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Split(line, ":")
			if len(f) == 7 && f[0] == name && f[6] != "" {
				return f[6]
			}
		}
	}
	return "/bin/sh"
}

// commandDir is the working directory: cwd confined to env.Root when set,
// and Root itself by default under --root.
func commandDir(env *module.Env, cwd string) (string, error) {
	if cwd == "" {
		return env.Root, nil
	}
	hp, err := fsOf(env).HostPath(cwd)
	if err != nil {
		return "", fmt.Errorf("cwd %s: %w", cwd, err)
	}
	fi, err := os.Stat(hp)
	if err != nil {
		return "", fmt.Errorf("cwd %s: %w", cwd, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("cwd %s is not a directory", cwd)
	}
	return hp, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// quoteArgv renders argv for display, quoting words with special characters.
func quoteArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, s := range argv {
		if s == "" || strings.ContainsAny(s, " \t\n\"'\\$`|&;<>()*?[]{}~#!") {
			parts[i] = strconv.Quote(s)
		} else {
			parts[i] = s
		}
	}
	return strings.Join(parts, " ")
}

// lines splits s into lines for stdout_lines (empty output: no lines).
func lines(s string) []any {
	if s == "" {
		return []any{}
	}
	parts := strings.Split(s, "\n")
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = strings.TrimSuffix(p, "\r")
	}
	return out
}
