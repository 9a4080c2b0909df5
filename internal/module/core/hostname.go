package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	name := str(true, "host name (RFC 1123: letters, digits and -, dot-separated labels, at most 64 characters)")
	name.Check = checkHostname
	registerNamed("core.system.hostname", module.Schema{
		Summary: "Set the host name: /etc/hostname and the running kernel's name",
		Params: map[string]module.Param{
			"name": name,
		},
		Unconfinable: true,
		Output: map[string]module.Field{
			"name":     outputField(module.TypeString, "the host name"),
			"previous": outputField(module.TypeString, "the running host name before the task"),
		},
		Example: `- name: Name the host
  module: core.system.hostname
  params:
    name: web-1.example.org
`,
	}, systemHostname)
}

var hostLabelRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

func checkHostname(n string) error {
	if n == "" || len(n) > 64 {
		return fmt.Errorf("%q: a host name has 1 to 64 characters", n)
	}
	for _, l := range strings.Split(n, ".") {
		if !hostLabelRe.MatchString(l) {
			return fmt.Errorf("%q is not a valid host name (letters, digits and - in dot-separated labels, no leading or trailing -)", n)
		}
	}
	return nil
}

func systemHostname(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name := a.str("name")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if err := checkHostname(name); err != nil {
		return domain.Result{}, paramErr("name", "%v", err)
	}
	live, err := os.Hostname()
	if err != nil {
		return domain.Result{}, fmt.Errorf("reading the host name: %w", err)
	}
	const file = "/etc/hostname"
	old, err := readSmallFile(env, file)
	if err != nil {
		return domain.Result{}, err
	}
	data := map[string]any{"name": name, "previous": live}
	want := []byte(name + "\n")
	fileOK := bytes.Equal(bytes.TrimSpace(old), []byte(name))
	if fileOK && live == name {
		return converged("host name is "+name, data), nil
	}
	diff := ""
	if !fileOK {
		diff = unifiedDiff(file, file, old, want)
	}
	if live != name {
		diff += fmt.Sprintf("running host name %s -> %s\n", live, name)
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have set the host name to " + name, Data: data}, nil
	}
	if !fileOK {
		res, err := ensureFile(ctx, env, fileWant{path: file, content: want, hasContent: true, uid: -1, gid: -1})
		if err != nil {
			return res, err
		}
	}
	if live != name {
		if err := unix.Sethostname([]byte(name)); err != nil {
			return domain.Result{}, fmt.Errorf("setting the running host name to %s: %w", name, err)
		}
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "host name set to " + name, Data: data}, nil
}

// readSmallFile reads a file through safefs; a missing file reads empty.
func readSmallFile(env *module.Env, file string) ([]byte, error) {
	t, err := fsOf(env).Open(file, safefs.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer t.Close()
	fi, exists, err := t.Lstat()
	if err != nil || !exists {
		return nil, err
	}
	if !fi.IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", file, describeKind(fi))
	}
	return t.ReadFile(1 << 20)
}
