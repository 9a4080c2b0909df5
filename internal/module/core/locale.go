package core

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	registerNamed("core.locale.generated", module.Schema{
		Summary: "Ensure a locale is generated (or not), as community.general.locale_gen: its line in /etc/locale.gen enabled, then locale-gen (Debian family)",
		Params: map[string]module.Param{
			"name":  str(true, "locale as /usr/share/i18n/SUPPORTED names it, e.g. de_DE.UTF-8"),
			"state": {Type: module.TypeString, Default: "present", Description: "present or absent"},
		},
		Unconfinable: true,
		Output:       map[string]module.Field{},
	}, localeGenerated)
}

const (
	localeGenFile   = "/etc/locale.gen"
	localeSupported = "/usr/share/i18n/SUPPORTED"
)

var localeNameRe = regexp.MustCompile(`^[A-Za-z0-9_.@-]+$`)

// normalizeLocale is a locale name as `locale -a` prints it: the charset
// lowercased without dashes (en_US.UTF-8 → en_US.utf8), as Ansible
// compares them.
func normalizeLocale(s string) string {
	name, charset, ok := strings.Cut(s, ".")
	if !ok {
		return s
	}
	mod := ""
	if i := strings.IndexByte(charset, '@'); i >= 0 {
		charset, mod = charset[:i], charset[i:]
	}
	return name + "." + strings.ReplaceAll(strings.ToLower(charset), "-", "") + mod
}

func localeGenerated(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name, state := a.str("name"), a.str("state")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if state == "" {
		state = "present"
	}
	if state != "present" && state != "absent" {
		return domain.Result{}, paramErr("state", "%q: want present or absent", state)
	}
	if !localeNameRe.MatchString(name) {
		return domain.Result{}, paramErr("name", "%q is not a locale name", name)
	}
	supported, err := os.ReadFile(localeSupported)
	if err != nil {
		return domain.Result{}, fmt.Errorf("reading %s (is the locales package installed?): %w", localeSupported, err)
	}
	charset := ""
	for _, line := range strings.Split(string(supported), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			charset = f[1]
		}
	}
	if charset == "" {
		return domain.Result{}, paramErr("name", "locale %s is not available on this host (not in %s)", name, localeSupported)
	}
	r, err := runCmd(ctx, nil, "locale", "-a")
	if err != nil || r.rc != 0 {
		return domain.Result{}, fmt.Errorf("listing the generated locales: %w", errOr(err, cmdError([]string{"locale", "-a"}, r)))
	}
	present := false
	for _, l := range strings.Fields(r.stdout) {
		if normalizeLocale(l) == normalizeLocale(name) {
			present = true
		}
	}
	data := map[string]any{"name": name}
	old, err := os.ReadFile(localeGenFile)
	if err != nil && !os.IsNotExist(err) {
		return domain.Result{}, err
	}
	want := localeGenLines(old, name, charset, state == "present")
	if present == (state == "present") && bytes.Equal(old, want) {
		return converged(fmt.Sprintf("locale %s is %s", name, state), data), nil
	}
	diff := unifiedDiff(localeGenFile, localeGenFile, old, want)
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: fmt.Sprintf("would make locale %s %s", name, state), Data: data}, nil
	}
	if !bytes.Equal(old, want) {
		t, err := safefs.FS{}.Open(localeGenFile, safefs.Options{})
		if err != nil {
			return domain.Result{}, fmt.Errorf("opening %s: %w", localeGenFile, err)
		}
		defer t.Close()
		if fi, ok, err := t.Lstat(); err != nil || (ok && !fi.IsRegular()) {
			return domain.Result{}, fmt.Errorf("%s is not a regular file (err %v)", localeGenFile, err)
		}
		if err := t.WriteFile(want, 0o644, -1, -1); err != nil {
			return domain.Result{}, err
		}
	}
	// Debian's locale-gen rebuilds the archive from the enabled lines, so
	// a disabled locale is gone after it too.
	gen := []string{"locale-gen"}
	r, err = runCmd(ctx, nil, gen...)
	if err != nil || r.rc != 0 {
		return domain.Result{}, fmt.Errorf("generating locales: %w", errOr(err, cmdError(gen, r)))
	}
	return domain.Result{Changed: true, Diff: diff, Msg: fmt.Sprintf("locale %s is %s", name, state), Data: data}, nil
}

func errOr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

// localeGenLines is /etc/locale.gen with name's line enabled (or
// commented out), as locale_gen edits it: a "# name charset" line is
// uncommented; without one, "name charset" is appended.
func localeGenLines(old []byte, name, charset string, enable bool) []byte {
	re := regexp.MustCompile(`^#?\s*` + regexp.QuoteMeta(name) + ` (.+)$`)
	lines := strings.SplitAfter(string(old), "\n")
	found := false
	var out strings.Builder
	for _, line := range lines {
		body := strings.TrimSuffix(line, "\n")
		if m := re.FindStringSubmatch(body); m != nil {
			found = true
			nl := line[len(body):]
			if enable {
				line = name + " " + m[1] + nl
			} else {
				line = "# " + name + " " + m[1] + nl
			}
		}
		out.WriteString(line)
	}
	if !found && enable {
		s := out.String()
		if s != "" && !strings.HasSuffix(s, "\n") {
			out.WriteString("\n")
		}
		out.WriteString(name + " " + charset + "\n")
	}
	return []byte(out.String())
}
