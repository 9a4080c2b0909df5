package core

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// The marker line before each entry core.cron.present manages in a user's
// crontab, and Ansible's, which it adopts: a role's entry imported from
// Ansible is found under its old marker and rewritten with ours, not
// duplicated.
const (
	cronMarker        = "#Soul Stack: "
	cronAnsibleMarker = "#Ansible: "
)

// crontabEntry is the wanted state of one entry of a user's crontab.
type crontabEntry struct {
	name   string
	line   string // the job line (with a leading # when disabled), or NAME=value
	env    bool   // a variable line, found by its name, without a marker
	absent bool
}

// editCrontab returns text with e applied. A job is its marker line and
// the line after it; every copy of it (under our marker or Ansible's) is
// replaced by one, at the place of the first. A variable is the line
// starting with NAME=; a new one goes on top, as Ansible puts it. Other
// lines are kept as they are.
func editCrontab(text string, e crontabEntry) string {
	lines := splitCrontab(text)
	out := make([]string, 0, len(lines)+2)
	placed := e.absent
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case e.env && strings.HasPrefix(l, e.name+"="):
			if !placed {
				out, placed = append(out, e.line), true
			}
			continue
		case !e.env && (l == cronMarker+e.name || l == cronAnsibleMarker+e.name):
			if i+1 < len(lines) && !isCronMarker(lines[i+1]) && strings.TrimSpace(lines[i+1]) != "" {
				i++
			}
			if !placed {
				out, placed = append(out, cronMarker+e.name, e.line), true
			}
			continue
		}
		out = append(out, l)
	}
	if !placed {
		if e.env {
			out = append([]string{e.line}, out...)
		} else {
			out = append(out, cronMarker+e.name, e.line)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

func isCronMarker(l string) bool {
	return strings.HasPrefix(l, cronMarker) || strings.HasPrefix(l, cronAnsibleMarker)
}

// splitCrontab splits a crontab into lines, without the final newline.
func splitCrontab(text string) []string {
	text = strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// normalizeCrontab is text as editCrontab writes it: one newline at the end.
func normalizeCrontab(text string) string {
	lines := splitCrontab(text)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// crontabPresent converges one entry of a user's crontab, read with
// crontab -l and installed whole with crontab - (as Ansible's cron does).
func crontabPresent(ctx context.Context, env *module.Env, c cronCall) (domain.Result, error) {
	if env.Root != "" || env.InKeeper {
		return domain.Result{}, fmt.Errorf("crontab: true edits a user's crontab, host-global state that cannot be confined to a soul's --root or run inside the Keeper; run it on a soul without --root, or write an /etc/cron.d file")
	}
	if _, err := exec.LookPath("crontab"); err != nil {
		return domain.Result{}, errors.New("crontab is not installed: install cron first (core.pkg.installed name: cron, or cronie on the RedHat family)")
	}
	if !nssHas(ctx, "passwd", c.user) {
		return domain.Result{}, paramErr("user", "no user %q on this host", c.user)
	}
	e := crontabEntry{name: c.name, env: c.envEntry, absent: c.state == "absent"}
	switch {
	case c.envEntry:
		e.line = c.name + "=" + c.job
	case c.disabled:
		e.line = "#" + c.sched + " " + c.job
	default:
		e.line = c.sched + " " + c.job
	}
	data := map[string]any{"path": "", "crontab": c.user, "schedule": c.sched, "state": c.state}
	if e.absent {
		data["schedule"] = ""
	}
	old, err := readCrontab(ctx, c.user)
	if err != nil {
		return domain.Result{}, err
	}
	cur := editCrontab(old, e)
	what := fmt.Sprintf("entry %q of %s's crontab", c.name, c.user)
	if cur == normalizeCrontab(old) {
		return converged(what+" is in the wanted state", data), nil
	}
	label := "crontab of " + c.user
	diff := unifiedDiff(label, label, []byte(old), []byte(cur))
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would change " + what, Data: data}, nil
	}
	if err := writeCrontab(ctx, c.user, cur); err != nil {
		return domain.Result{}, err
	}
	after, err := readCrontab(ctx, c.user)
	if err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Changed: true, Diff: diff, Msg: "changed " + what, Data: data}
	if normalizeCrontab(after) != cur {
		res.Failed, res.Msg = true, "crontab installed but "+what+" does not read back as written"
	}
	return res, nil
}

// readCrontab returns a user's crontab; "" when the user has none.
func readCrontab(ctx context.Context, user string) (string, error) {
	argv := []string{"crontab", "-u", user, "-l"}
	r, err := runCmd(ctx, nil, argv...)
	if err != nil {
		return "", fmt.Errorf("reading the crontab of %s: %w", user, err)
	}
	if r.rc != 0 {
		if strings.Contains(r.stderr, "no crontab for") {
			return "", nil
		}
		return "", fmt.Errorf("reading the crontab of %s: %w", user, cmdError(argv, r))
	}
	return r.stdout, nil
}

// writeCrontab installs text as a user's whole crontab.
func writeCrontab(ctx context.Context, user, text string) error {
	argv := []string{"crontab", "-u", user, "-"}
	r, err := runProc(ctx, procSpec{argv: argv, stdin: &text})
	if err != nil {
		return fmt.Errorf("installing the crontab of %s: %w", user, err)
	}
	if r.rc != 0 {
		return fmt.Errorf("installing the crontab of %s: %w", user, cmdError(argv, r))
	}
	return nil
}
