package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	register("core.sysctl.present", module.Schema{
		Summary: "Ensure a kernel parameter (sysctl) has a value, persisted in /etc/sysctl.d by default",
		Params: map[string]module.Param{
			"name":    str(true, "sysctl key, e.g. net.core.somaxconn"),
			"value":   {Type: module.TypeAny, Required: true, Description: "wanted value (string or number; fields are compared whitespace-insensitively)"},
			"persist": {Type: module.TypeBool, Default: true, Description: "also write /etc/sysctl.d/60-soulstack-<name>.conf (or file)"},
			"file":    str(false, "persist in this file instead (Ansible's sysctl_file, e.g. /etc/sysctl.d/99-hardening.conf), shared with other keys: the key's line is replaced or appended, and the other key lines are rewritten as key=value with duplicates dropped, as Ansible does; an absolute path"),
		},
		Unconfinable: true,
	}, sysctlPresent)
}

var sysctlNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:/-]*$`)

// sysctlDirs are where the live values and the persisted files live; they
// are fields so tests read the same code path.
type sysctlDirs struct{ proc, conf string }

var defaultSysctlDirs = sysctlDirs{proc: "/proc/sys", conf: "/etc/sysctl.d"}

// sysctlKeyPath maps net.ipv4.ip_forward to net/ipv4/ip_forward; a name that
// already uses slashes (for keys with dots in them, like interface names)
// is taken as it is.
func sysctlKeyPath(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return strings.ReplaceAll(name, ".", "/")
}

// normalizeSysctl compares values field by field, as the kernel prints
// multi-value keys with tabs.
func normalizeSysctl(s string) string { return strings.Join(strings.Fields(s), " ") }

func sysctlPresent(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	return sysctlApply(defaultSysctlDirs, p, env)
}

func sysctlApply(dirs sysctlDirs, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name, value, persist, file := a.str("name"), a.scalar("value"), a.boolean("persist", true), a.str("file")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if file != "" && (!persist || !filepath.IsAbs(file) || filepath.Clean(file) != file) {
		return domain.Result{}, fmt.Errorf("file %q: must be a clean absolute path, with persist true", file)
	}
	if !sysctlNameRe.MatchString(name) || strings.Contains(name, "..") {
		return domain.Result{}, fmt.Errorf("%q is not a valid sysctl name", name)
	}
	want := normalizeSysctl(value)
	if want == "" {
		return domain.Result{}, errors.New("value must not be empty")
	}
	procPath := dirs.proc + "/" + sysctlKeyPath(name)
	raw, err := os.ReadFile(procPath)
	if errors.Is(err, fs.ErrNotExist) {
		return domain.Result{}, fmt.Errorf("sysctl %s does not exist on this kernel (no %s)", name, procPath)
	}
	if err != nil {
		return domain.Result{}, fmt.Errorf("reading sysctl %s: %w", name, err)
	}
	live := normalizeSysctl(string(raw))
	confPath := dirs.conf + "/60-soulstack-" + strings.ReplaceAll(name, "/", ".") + ".conf"
	conf := []byte(name + " = " + want + "\n")
	var oldConf []byte
	confDiffers := false
	if file != "" {
		confPath = file
	}
	if persist {
		oldConf, err = os.ReadFile(confPath)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return domain.Result{}, fmt.Errorf("reading %s: %w", confPath, err)
		}
		if file != "" {
			conf = sysctlFileLines(oldConf, name, want)
		}
		confDiffers = err != nil || !bytes.Equal(oldConf, conf)
	}
	data := map[string]any{"name": name, "value": want, "previous": live}
	if persist {
		data["file"] = confPath
	}
	if live == want && !confDiffers {
		return converged(fmt.Sprintf("%s is %s", name, want), data), nil
	}
	var diff strings.Builder
	if live != want {
		fmt.Fprintf(&diff, "%s: %s -> %s\n", name, live, want)
	}
	if confDiffers {
		old := confPath
		if oldConf == nil {
			old = "/dev/null"
		}
		diff.WriteString(unifiedDiff(old, confPath, oldConf, conf))
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff.String(), Msg: fmt.Sprintf("would set %s to %s", name, want), Data: data}, nil
	}
	res := domain.Result{Changed: true, Diff: diff.String(), Msg: fmt.Sprintf("set %s to %s", name, want), Data: data}
	if live != want {
		if err := writeSysctl(procPath, want); err != nil {
			return domain.Result{}, fmt.Errorf("setting sysctl %s: %w", name, err)
		}
		raw, err := os.ReadFile(procPath)
		if err != nil {
			return domain.Result{}, fmt.Errorf("reading back sysctl %s: %w", name, err)
		}
		if got := normalizeSysctl(string(raw)); got != want {
			res.Failed = true
			res.Msg = fmt.Sprintf("wrote %s to %s but the kernel kept %s", want, name, got)
			return res, nil
		}
	}
	if confDiffers {
		t, err := safefs.FS{}.Open(confPath, safefs.Options{MakeDirs: true})
		if err != nil {
			return domain.Result{}, fmt.Errorf("opening %s: %w", confPath, err)
		}
		defer t.Close()
		if fi, ok, err := t.Lstat(); err != nil || (ok && !fi.IsRegular()) {
			return domain.Result{}, fmt.Errorf("%s is not a regular file (err %v)", confPath, err)
		}
		if err := t.WriteFile(conf, 0o644, -1, -1); err != nil {
			return domain.Result{}, err
		}
	}
	return res, nil
}

// sysctlFileLines is a shared sysctl file with name set to value, edited
// as Ansible's sysctl module edits its sysctl_file: blank, comment and
// other lines without "=" are kept; each key's first line is rewritten as
// key=value (name's with the new value) and later lines of the same key
// dropped; name is appended when the file lacks it.
func sysctlFileLines(old []byte, name, value string) []byte {
	var out bytes.Buffer
	seen := map[string]bool{}
	lines := strings.SplitAfter(string(old), "\n")
	for _, line := range lines {
		if line == "" {
			continue
		}
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") || strings.HasPrefix(trim, ";") || !strings.Contains(trim, "=") {
			out.WriteString(line)
			continue
		}
		k, v, _ := strings.Cut(trim, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if seen[k] {
			continue
		}
		seen[k] = true
		if k == name {
			v = value
		}
		out.WriteString(k + "=" + v + "\n")
	}
	if !seen[name] {
		out.WriteString(name + "=" + value + "\n")
	}
	return out.Bytes()
}

func writeSysctl(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
