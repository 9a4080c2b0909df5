package core

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	name := str(true, "unit name with its type suffix, e.g. app.service or backup.timer")
	name.Check = checkUnitName
	registerNamed("core.systemd.unit", module.Schema{
		Summary: "Install a systemd unit file (content or template) under /etc/systemd/system, daemon-reload only when it changed, then bring it to a state and/or enable it",
		Params: map[string]module.Param{
			"name":     name,
			"content":  str(false, "the unit file's content"),
			"template": str(false, "template of the scenario or destiny rendering the unit file"),
			"vars":     typed(module.TypeMap, "extra template data"),
			"state":    str(false, "started, stopped, restarted or reloaded"),
			"enabled":  typed(module.TypeBool, "start at boot (true) or not (false)"),
			"backup":   backupParam,
		},
		ExactlyOne:   [][]string{{"content", "template"}},
		Unconfinable: true,
		Output: withFields(serviceOutput, map[string]module.Field{
			"path":   fileOutput["path"],
			"sha256": fileOutput["sha256"],
			"unit_changed": outputField(module.TypeBool,
				"the unit file was (check mode: would be) written; systemd was then reloaded"),
		}),
		Example: `- name: Install and start the app unit
  module: core.systemd.unit
  params:
    name: app.service
    content: |
      [Unit]
      Description=App
      [Service]
      ExecStart=/usr/local/bin/app
      [Install]
      WantedBy=multi-user.target
    state: started
    enabled: true
`,
	}, systemdUnit)
}

// unitSuffixes are the unit types core.systemd.unit installs.
var unitSuffixes = []string{".service", ".socket", ".timer", ".path", ".mount", ".automount", ".target", ".slice"}

// checkUnitName accepts a service name that ends with a unit type.
func checkUnitName(n string) error {
	if err := checkServiceName(n); err != nil {
		return err
	}
	for _, s := range unitSuffixes {
		if strings.HasSuffix(n, s) && len(n) > len(s) {
			return nil
		}
	}
	return fmt.Errorf("%q has no unit type suffix (%s)", n, strings.Join(unitSuffixes, ", "))
}

// systemdUnit writes the unit file like core.file.present, reloads
// systemd only when the file changed, then hands state/enabled to
// core.service.state.
func systemdUnit(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name, content, tmpl, vars := a.str("name"), a.str("content"), a.str("template"), a.anyMap("vars")
	state, hasEnabled := a.str("state"), a.has("enabled")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if err := checkUnitName(name); err != nil {
		return domain.Result{}, paramErr("name", "%v", err)
	}
	if state != "" && serviceStates[state] == nil {
		return domain.Result{}, paramErr("state", "%q: want started, stopped, restarted or reloaded", state)
	}
	if !systemdBooted() {
		return domain.Result{}, errors.New("systemd is not PID 1 here: core.systemd.unit needs a systemd host")
	}
	body := []byte(content)
	if tmpl != "" {
		var err error
		if body, err = renderTemplate(env, tmpl, vars); err != nil {
			return domain.Result{}, paramErr("template", "%v", err)
		}
	}
	w := fileWant{path: path.Join("/etc/systemd/system", name), content: body, hasContent: true,
		mode: 0o644, hasMode: true, uid: 0, gid: 0, backup: a.boolean("backup", false)}
	fr, err := ensureFile(ctx, env, w)
	if err != nil {
		return domain.Result{}, err
	}
	data := map[string]any{"name": name, "path": w.path, "sha256": fr.Data["sha256"], "unit_changed": fr.Changed, "daemon_reload": fr.Changed}
	if b, ok := fr.Data["backup_file"]; ok {
		data["backup_file"] = b
	}
	out := domain.Result{Changed: fr.Changed, Diff: fr.Diff, Msg: fr.Msg, Data: data}
	if fr.Changed && !env.Check {
		argv := []string{"systemctl", "daemon-reload"}
		r, err := runCmd(ctx, nil, argv...)
		if err == nil && r.rc != 0 {
			err = cmdError(argv, r)
		}
		if err != nil {
			return domain.Result{}, fmt.Errorf("reloading systemd after writing %s: %w", w.path, err)
		}
		out.Msg += "; systemd reloaded"
	}
	if state == "" && !hasEnabled {
		return out, nil
	}
	if env.Check && fr.Changed {
		// systemd does not know the new definition yet: say what would follow.
		var then []string
		if state != "" {
			then = append(then, "make it "+state)
		}
		if hasEnabled {
			then = append(then, fmt.Sprintf("set enabled %v", p["enabled"]))
		}
		out.Msg += ", then " + strings.Join(then, " and ")
		return out, nil
	}
	call := map[string]any{"name": name}
	if state != "" {
		call["state"] = state
	}
	if hasEnabled {
		call["enabled"] = p["enabled"]
	}
	sr, err := serviceState(ctx, call, env)
	if err != nil {
		return domain.Result{}, err
	}
	for k, v := range sr.Data {
		if k != "daemon_reload" {
			data[k] = v
		}
	}
	out.Changed = out.Changed || sr.Changed
	out.Failed = sr.Failed
	out.Diff += sr.Diff
	out.Stderr = sr.Stderr
	out.Msg += "; " + sr.Msg
	return out, nil
}
