package core

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	registerNamed("core.system.timezone", module.Schema{
		Summary: "Set the time zone: /etc/localtime links to the zoneinfo file (and /etc/timezone names it where it exists)",
		Params: map[string]module.Param{
			"name": str(true, `IANA zone name, e.g. "Europe/Berlin" or "UTC"; must exist under /usr/share/zoneinfo`),
		},
		Unconfinable: true,
		Output: map[string]module.Field{
			"name":     outputField(module.TypeString, "the time zone"),
			"previous": outputField(module.TypeString, "the time zone before the task (\"\" when unknown)"),
		},
		Example: `- name: Time zone
  module: core.system.timezone
  params:
    name: Europe/Berlin
`,
	}, systemTimezone)
}

const zoneinfoDir = "/usr/share/zoneinfo"

var zoneRe = regexp.MustCompile(`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`)

func systemTimezone(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name := a.str("name")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if !zoneRe.MatchString(name) || strings.Contains(name, "..") {
		return domain.Result{}, paramErr("name", "%q is not a time zone name", name)
	}
	zone := path.Join(zoneinfoDir, name)
	zt, err := fsOf(env).Open(zone, safefs.Options{Follow: true})
	if err == nil {
		fi, exists, lerr := zt.Lstat()
		zt.Close()
		if lerr != nil || !exists || !fi.IsRegular() {
			err = fs.ErrNotExist
		}
	}
	if err != nil {
		return domain.Result{}, paramErr("name", "unknown time zone %q: no file %s (is tzdata installed?)", name, zone)
	}
	const link = "/etc/localtime"
	t, err := fsOf(env).Open(link, safefs.Options{})
	if err != nil {
		return domain.Result{}, err
	}
	defer t.Close()
	fi, exists, err := t.Lstat()
	if err != nil {
		return domain.Result{}, err
	}
	previous, target := "", ""
	if exists && fi.IsSymlink() {
		if target, err = t.Readlink(); err != nil {
			return domain.Result{}, err
		}
		if i := strings.Index(target, "zoneinfo/"); i >= 0 {
			previous = target[i+len("zoneinfo/"):]
		}
	}
	if exists && fi.IsDir() {
		return domain.Result{}, fmt.Errorf("%s is a directory", link)
	}
	// Debian also names the zone in /etc/timezone; kept in step where it exists.
	const tzFile = "/etc/timezone"
	tzOld, err := readSmallFile(env, tzFile)
	if err != nil {
		return domain.Result{}, err
	}
	if previous == "" && len(tzOld) > 0 {
		previous = strings.TrimSpace(string(tzOld))
	}
	data := map[string]any{"name": name, "previous": previous}
	linkOK := target == zone
	tzOK := tzOld == nil || bytes.Equal(bytes.TrimSpace(tzOld), []byte(name))
	if linkOK && tzOK {
		return converged("time zone is "+name, data), nil
	}
	var diff string
	if !linkOK {
		was := target
		if !exists {
			was = "(none)"
		} else if !fi.IsSymlink() {
			was = fmt.Sprintf("(%s, %d bytes)", describeKind(fi), fi.Size)
		}
		diff = fmt.Sprintf("--- %s -> %s\n+++ %s -> %s\n", link, was, link, zone)
	}
	if !tzOK {
		diff += unifiedDiff(tzFile, tzFile, tzOld, []byte(name+"\n"))
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have set the time zone to " + name, Data: data}, nil
	}
	if !linkOK {
		if err := t.Symlink(zone); err != nil {
			return domain.Result{}, err
		}
	}
	if !tzOK {
		if _, err := ensureFile(ctx, env, fileWant{path: tzFile, content: []byte(name + "\n"), hasContent: true, uid: -1, gid: -1}); err != nil {
			return domain.Result{}, err
		}
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "time zone set to " + name, Data: data}, nil
}
