package ansibleimport

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// moduleTable is the one table of Ansible modules the importer maps: each
// entry picks the Soul Stack module and maps the arguments; the README's
// "Coming from Ansible" section prints its keys (ModuleTable).
var moduleTable = map[string]func(*margs) *into{
	"template":        convTemplate,
	"copy":            convCopy,
	"file":            convFile,
	"lineinfile":      convLine,
	"blockinfile":     convBlock,
	"replace":         convReplace,
	"apt":             convPackage,
	"package":         convPackage,
	"dnf":             convPackage,
	"yum":             convPackage,
	"service":         convService,
	"systemd":         convService,
	"systemd_service": convService,
	"command":         convCommand,
	"shell":           convShell,
	"user":            convUser,
	"group":           convGroup,
	"cron":            convCron,
	"sysctl":          convSysctl,
	"mount":           convMount,
	"authorized_key":  convAuthorizedKey,
	"hostname":        func(a *margs) *into { in := a.into("core.system.hostname"); in.same("name"); return in },
	"timezone":        func(a *margs) *into { in := a.into("core.system.timezone"); in.same("name"); return in },
	"get_url":         convGetURL,
	"unarchive":       convUnarchive,
	"debug":           convDebug,
	"fail":            func(a *margs) *into { in := a.into("core.test.fail"); in.copy("msg", "message"); return in },
	"assert":          convAssert,
	"wait_for":        convWaitFor,
	"stat":            func(a *margs) *into { in := a.into("core.file.stat"); in.copy("path|dest|name", "path"); return in },
	"reboot":          func(a *margs) *into { in := a.into("core.system.rebooted"); in.copy("msg", "reason"); return in },
	"ping":            func(a *margs) *into { return a.into("core.test.ping") },
	"pause":           convPause,
	"ini_file": func(a *margs) *into {
		in := a.into("core.file.ini")
		in.copy("path|dest", "path")
		in.same("section", "option", "value", "values", "state", "exclusive", "allow_no_value", "no_extra_spaces", "create",
			"ignore_spaces", "modify_inactive_option", "section_has_values", "backup")
		in.fileAttrs()
		return in
	},
	"git": func(a *margs) *into {
		in := a.into("core.git")
		in.same("repo", "dest", "version", "force", "depth", "update", "clone", "remote", "bare", "single_branch", "refspec",
			"recursive", "accept_hostkey", "accept_newhostkey", "key_file", "ssh_opts")
		return in
	},
}

// ModuleTable lists the Ansible modules the importer maps, sorted.
func ModuleTable() []string {
	out := make([]string, 0, len(moduleTable))
	for k := range moduleTable {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// common maps the file attributes every file module shares.
func (in *into) fileAttrs() {
	in.same("mode", "owner", "group")
}

func convTemplate(a *margs) *into {
	in := a.into("core.file.rendered")
	in.copy("dest|path", "path")
	if a.has("src") {
		in.set("template", a.c.templatePath(a.str("src"), a.tc))
	}
	in.fileAttrs()
	in.same("validate", "backup", "trim_blocks", "lstrip_blocks", "newline_sequence")
	if a.has("force") && !isTrue(a.str("force")) {
		in.set("force", false)
	}
	return in
}

// templatePath is the template's path in the destiny: templates/ of the
// role, with an expression translated.
func (c *converter) templatePath(src string, tc *taskConv) string {
	tr := TranslateValue(src, c.scope("", ""))
	tc.take(tr, "src")
	return "templates/" + strings.TrimPrefix(valueOrTodo(tr, src), "templates/")
}

func convCopy(a *margs) *into {
	if a.has("content") {
		in := a.into("core.file.present")
		in.copy("dest|path", "path")
		in.copy("content", "content")
		in.fileAttrs()
		in.same("validate", "backup")
		return in
	}
	in := a.into("core.file.copied")
	in.copy("dest|path", "path")
	if a.has("src") {
		src := a.str("src")
		if isTrue(a.str("remote_src")) {
			in.set("src", a.c.translateAny(src, a.tc, a.sc, "src"))
			in.set("remote_src", true)
		} else {
			in.set("src", "files/"+src)
		}
	}
	in.fileAttrs()
	in.same("validate", "backup", "directory_mode", "local_follow", "force")
	return in
}

func convFile(a *margs) *into {
	state := a.str("state")
	if state == "" {
		state = "file"
		if a.has("src") {
			state = "link"
		}
	}
	var in *into
	switch state {
	case "directory":
		in = a.into("core.file.directory")
		in.same("recurse")
	case "absent":
		in = a.into("core.file.absent")
	case "link":
		in = a.into("core.file.link")
		in.copy("src", "target")
		in.same("force")
	case "hard":
		in = a.into("core.file.link")
		in.copy("src", "target")
		in.set("hard", true)
		in.same("force")
	case "touch":
		in = a.into("core.file.touched")
		in.same("modification_time", "access_time", "modification_time_format", "access_time_format")
	default:
		a.tc.need("file state=%s (attributes of an existing file) has no Soul Stack module yet", state)
		return nil
	}
	in.copy("path|dest|name", "path")
	if state != "absent" {
		in.fileAttrs()
	}
	return in
}

func convLine(a *margs) *into {
	in := a.into("core.file.line")
	in.copy("path|dest|destfile|name", "path")
	in.same("line", "regexp", "insert_after", "insert_before", "state", "create", "backrefs", "search_string", "firstmatch", "validate", "backup")
	if a.has("regex") {
		in.copy("regex", "regexp")
	}
	in.fileAttrs()
	return in
}

func convBlock(a *margs) *into {
	in := a.into("core.file.block")
	in.copy("path|dest|destfile|name", "path")
	in.copy("block|content", "block")
	if a.has("marker") {
		m := a.str("marker")
		in.set("marker", strings.ReplaceAll(m, "{mark}", "{mark}"))
	}
	in.same("insert_after", "insert_before", "state", "create", "marker_begin", "marker_end", "append_newline", "prepend_newline", "validate", "backup")
	in.fileAttrs()
	return in
}

func convReplace(a *margs) *into {
	in := a.into("core.file.replace")
	in.copy("path|dest|destfile|name", "path")
	in.same("regexp", "before", "after", "validate", "backup")
	if a.has("replace") {
		r := a.str("replace")
		if strings.Contains(r, `\`) || strings.Contains(r, "$") {
			a.tc.approx("replace: %q uses backreferences; check they expand as Python's re.sub did", r)
		}
		in.set("replace", a.c.translateAny(r, a.tc, a.sc, "replace"))
	}
	in.fileAttrs()
	return in
}

// packageNames maps name: (a string, a comma list or a list) to name or
// names.
// wholeExpr tells whether s is one Jinja expression and nothing else
// ("{{ git_packages }}"), and gives its text.
func wholeExpr(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{{") || !strings.HasSuffix(t, "}}") || strings.Count(t, "{{") != 1 {
		return "", false
	}
	return strings.TrimSpace(t[2 : len(t)-2]), true
}

func packageNames(a *margs, in *into) {
	k := a.first("name", "pkg", "package")
	if k == "" {
		return
	}
	switch v := a.t.Args[k].(type) {
	case []any:
		in.set("names", a.val(k))
	case string:
		if strings.Contains(v, ",") && !strings.Contains(v, "{{") {
			parts := strings.Split(v, ",")
			list := make([]any, len(parts))
			for i, p := range parts {
				list[i] = strings.TrimSpace(p)
			}
			a.used[k] = true
			in.set("names", list)
			return
		}
		if e, whole := wholeExpr(v); whole {
			// Ansible takes one name or a list here; ours are two params.
			switch a.c.vars[e] {
			case KindString:
				in.set("name", a.val(k))
			case KindList:
				in.set("names", a.val(k))
			default:
				cel := unwrap(a.val(k).(string))
				in.set("names", fmt.Sprintf("${ type(%s) == type([]) ? dyn(%s) : [%s] }", cel, cel, cel))
			}
			return
		}
		in.set("name", a.val(k))
	default:
		in.set("name", a.val(k))
	}
}

func convPackage(a *margs) *into {
	if a.first("name", "pkg", "package", "deb") == "" && isTrue(a.str("update_cache")) && !a.has("upgrade") {
		// apt: update_cache=true alone refreshes the index.
		in := a.into("core.pkg.index_refreshed")
		in.same("cache_valid_time")
		a.used["state"] = true
		return in
	}
	state := a.str("state")
	var in *into
	switch state {
	case "", "present", "installed":
		in = a.into("core.pkg.installed")
	case "latest":
		in = a.into("core.pkg.installed")
		in.set("latest", true)
	case "absent", "removed":
		in = a.into("core.pkg.removed")
		in.same("purge")
	default:
		a.tc.need("%s state=%s has no Soul Stack equivalent", a.t.Module, state)
		return nil
	}
	packageNames(a, in)
	if in.mod == "core.pkg.installed" {
		in.same("update_cache", "cache_valid_time", "default_release", "install_recommends", "allow_unauthenticated", "allow_downgrade", "deb")
		if a.has("enablerepo") {
			// Ansible takes one repository or a comma list; ours a list.
			v := a.val("enablerepo")
			if omit := a.omit; omit != "" {
				a.omit = ""
				v = in.omitted("enablerepo", v, omit)
			} else if _, isList := v.([]any); !isList {
				v = []any{v}
			}
			in.set("enablerepo", v)
		}
	}
	if a.t.Module == "package" && a.has("use") {
		a.tc.approx("use: the package manager follows the host's family")
	}
	return in
}

func convService(a *margs) *into {
	if a.first("name", "service", "unit") == "" && isTrue(a.str("daemon_reload")) {
		// systemd: daemon_reload=true alone: Ansible reloads every time.
		in := a.into("core.systemd.daemon_reloaded")
		in.set("force", true)
		return in
	}
	in := a.into("core.service.state")
	in.copy("name|service|unit", "name")
	if a.has("state") {
		in.set("state", a.val("state"))
	}
	if a.has("enabled") {
		in.set("enabled", a.val("enabled"))
	}
	in.same("masked")
	if isTrue(a.str("daemon_reload")) {
		a.tc.approx("daemon_reload: core.service.* reloads systemd when it says NeedDaemonReload=yes; a reload for other reasons is not done")
	}
	return in
}

func convCommand(a *margs) *into {
	in := a.into("core.exec.run")
	switch {
	case a.t.FreeForm != "" || a.has("cmd"):
		line := a.t.FreeForm
		if line == "" {
			line = a.str("cmd")
		}
		words := shellWords(line)
		if len(words) == 0 {
			a.tc.need("command with no command line")
			return nil
		}
		in.set("cmd", a.c.translateAny(unquote(words[0].raw), a.tc, a.sc, "cmd"))
		if len(words) > 1 {
			args := make([]any, 0, len(words)-1)
			for _, w := range words[1:] {
				args = append(args, a.c.translateAny(unquote(w.raw), a.tc, a.sc, "cmd"))
			}
			in.set("args", args)
		}
	case a.has("argv"):
		argv, _ := a.val("argv").([]any)
		if len(argv) == 0 {
			a.tc.need("command with an empty argv")
			return nil
		}
		in.set("cmd", argv[0])
		in.set("args", argv[1:])
	}
	commandOptions(a, in)
	return in
}

func convShell(a *margs) *into {
	in := a.into("core.cmd.shell")
	line := a.t.FreeForm
	if line == "" {
		line = a.str("cmd")
	}
	in.set("cmd", a.c.translateAny(line, a.tc, a.sc, "cmd"))
	if a.has("executable") {
		a.tc.need("executable=%s: core.cmd.shell runs /bin/sh", a.str("executable"))
	}
	commandOptions(a, in)
	return in
}

func commandOptions(a *margs, in *into) {
	in.copy("chdir", "cwd")
	in.copy("stdin", "stdin")
	if env, ok := a.t.Keywords["environment"]; ok {
		in.set("env", a.c.translateNode(env, a.tc, a.sc, "environment"))
	}
	for _, k := range []string{"creates", "removes"} {
		if a.has(k) {
			a.used[k] = true
			a.tc.need("%s=%s: add a core.file.stat probe and a when: on its result", k, a.t.Args[k])
		}
	}
}

func convUser(a *margs) *into {
	var in *into
	if a.str("state") == "absent" {
		in = a.into("core.user.absent")
		in.same("remove", "force")
	} else {
		in = a.into("core.user.present")
		in.same("uid", "shell", "home", "system", "password", "update_password", "expires", "local", "non_unique", "comment", "create_home", "move_home", "append", "password_lock")
		if a.has("groups") {
			g := a.t.Args["groups"]
			if s, ok := g.(string); ok && !strings.Contains(s, "{{") {
				parts := strings.Split(s, ",")
				list := make([]any, 0, len(parts))
				for _, p := range parts {
					if p = strings.TrimSpace(p); p != "" {
						list = append(list, p)
					}
				}
				a.used["groups"] = true
				in.set("groups", list)
			} else {
				in.set("groups", a.val("groups"))
			}
		}
		in.copy("group", "group")
	}
	in.same("name")
	return in
}

func convGroup(a *margs) *into {
	var in *into
	if a.str("state") == "absent" {
		in = a.into("core.group.absent")
	} else {
		in = a.into("core.group.present")
		in.same("gid", "system", "local", "non_unique")
	}
	in.same("name")
	return in
}

func convCron(a *margs) *into {
	in := a.into("core.cron.present")
	in.same("name", "user", "state", "disabled", "env")
	in.copy("job", "command")
	if a.has("special_time") {
		in.set("schedule", "@"+a.str("special_time"))
	} else if a.first("minute", "hour", "day", "month", "weekday") != "" {
		field := func(k string) string {
			if a.has(k) {
				return a.str(k)
			}
			return "*"
		}
		in.set("schedule", strings.Join([]string{field("minute"), field("hour"), field("day"), field("month"), field("weekday")}, " "))
	}
	if a.has("cron_file") {
		in.set("file", a.val("cron_file"))
	}
	return in
}

func convSysctl(a *margs) *into {
	in := a.into("core.sysctl.present")
	in.copy("name|key", "name")
	in.copy("value|val", "value")
	if a.has("sysctl_file") {
		in.set("file", a.val("sysctl_file"))
	}
	if a.has("state") && a.str("state") != "present" {
		a.tc.need("sysctl state=%s: removing a sysctl setting has no Soul Stack module", a.str("state"))
	}
	for _, k := range []string{"reload", "sysctl_set", "ignoreerrors"} {
		if a.has(k) {
			a.used[k] = true
			a.tc.approx("%s: core.sysctl.present sets the running value and persists it", k)
		}
	}
	return in
}

func convMount(a *margs) *into {
	in := a.into("core.mount.mounted")
	in.copy("path|name", "path")
	in.same("src", "fstype", "opts", "state", "boot", "backup", "dump", "passno")
	return in
}

func convAuthorizedKey(a *margs) *into {
	in := a.into("core.ssh.authorized_key")
	in.same("user", "key", "state", "exclusive")
	return in
}

func convGetURL(a *margs) *into {
	in := a.into("core.file.downloaded")
	in.copy("dest", "path")
	in.same("url", "force")
	if a.has("checksum") {
		cs := a.str("checksum")
		algo, sum, ok := strings.Cut(cs, ":")
		if ok && algo == "sha256" && !strings.Contains(sum, "{{") {
			in.set("sha256", sum)
		} else {
			a.tc.need("checksum=%s: core.file.downloaded checks a literal sha256", cs)
		}
	}
	in.fileAttrs()
	return in
}

func convUnarchive(a *margs) *into {
	in := a.into("core.archive.extracted")
	in.copy("dest", "path")
	if a.has("src") {
		remote := isTrue(a.str("remote_src")) || (a.has("copy") && !isTrue(a.str("copy")))
		if remote {
			in.set("src", a.val("src"))
		} else {
			in.set("src", "files/"+a.str("src"))
		}
	}
	a.used["remote_src"], a.used["copy"] = true, true
	in.same("creates", "list_files", "include", "exclude", "keep_newer")
	in.fileAttrs()
	return in
}

func convDebug(a *margs) *into {
	in := a.into("core.test.echo")
	switch {
	case a.has("msg"):
		in.set("message", a.val("msg"))
	case a.has("var"):
		v := a.str("var")
		tr := TranslateValue("{{ "+v+" }}", a.sc)
		a.tc.take(tr, "var")
		in.set("message", valueOrTodo(tr, v))
	default:
		in.set("message", "Hello world!")
	}
	if a.has("verbosity") {
		a.used["verbosity"] = true
	}
	return in
}

func convAssert(a *margs) *into {
	in := a.into("core.test.fail")
	that, ok := a.t.Args["that"]
	a.used["that"] = true
	var conds []string
	switch x := that.(type) {
	case string:
		conds = []string{x}
	case []any:
		for _, c := range x {
			conds = append(conds, fmt.Sprint(c))
		}
	}
	if !ok || len(conds) == 0 {
		a.tc.need("assert without that:")
		return nil
	}
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = "(" + c + ")"
	}
	a.c.pendingWhen = "not (" + strings.Join(parts, " and ") + ")"
	msg := "Assertion failed"
	if k := a.first("fail_msg", "msg"); k != "" {
		in.set("message", a.val(k))
	} else {
		in.set("message", msg)
	}
	if a.has("success_msg") || a.has("quiet") {
		a.used["success_msg"], a.used["quiet"] = true, true
	}
	return in
}

func convWaitFor(a *margs) *into {
	if a.has("path") {
		in := a.into("core.wait.file")
		in.same("path", "state")
		waitTimeout(a, in)
		return in
	}
	in := a.into("core.wait.port")
	in.same("host", "port")
	if s := a.str("state"); s != "" && s != "started" && s != "present" {
		in.set("state", s)
	}
	waitTimeout(a, in)
	for _, k := range []string{"delay", "sleep", "connect_timeout"} {
		if a.has(k) {
			a.used[k] = true
			a.tc.approx("%s=%v: core.wait.* polls on its own interval", k, a.t.Args[k])
		}
	}
	return in
}

func waitTimeout(a *margs, in *into) {
	if a.has("timeout") {
		a.used["timeout"] = true
		if n, err := strconv.Atoi(a.str("timeout")); err == nil {
			in.set("timeout", fmt.Sprintf("%ds", n))
		} else {
			a.tc.need("timeout=%v is not a number of seconds", a.t.Args["timeout"])
		}
	}
}

func convPause(a *margs) *into {
	in := a.into("core.test.sleep")
	switch {
	case a.has("seconds"):
		in.set("duration", a.str("seconds")+"s")
	case a.has("minutes"):
		in.set("duration", a.str("minutes")+"m")
	default:
		a.tc.need("pause without seconds or minutes waits for a person: there is no prompt in a run")
		return nil
	}
	return in
}
