package core

import "github.com/soulstack/soulstack/internal/module"

// Output schemas of the core modules: the module-specific fields each puts in
// its result (domain.Result.Data, shown at top level of register.<name>)
// beyond module.ResultFields. register() copies them into the module's
// Schema.Output unless the Schema literal declares its own.
func outputField(t module.ParamType, desc string) module.Field {
	return module.Field{Type: t, Description: desc}
}

var (
	fileOutput = map[string]module.Field{
		"path":   outputField(module.TypeString, "the path managed"),
		"size":   outputField(module.TypeInt, "content size in bytes"),
		"sha256": outputField(module.TypeString, "SHA-256 of the content, hex"),
		"mode":   outputField(module.TypeString, `octal mode, e.g. "0644"`),
	}
	serviceOutput = map[string]module.Field{
		"name":    outputField(module.TypeString, "service name"),
		"state":   outputField(module.TypeString, "running or stopped"),
		"manager": outputField(module.TypeString, "init system: systemd or sysv"),
		"enabled": outputField(module.TypeBool, "starts at boot (core.service.enabled)"),
		"daemon_reload": outputField(module.TypeBool,
			"systemd reloaded its unit files first, because the unit had changed on disk (NeedDaemonReload=yes)"),
	}
	execOutput = map[string]module.Field{
		"cmd":          outputField(module.TypeString, "the command as run"),
		"stdout_lines": outputField(module.TypeStrList, "stdout split into lines"),
	}
)

// coreOutputs maps a core module name to its declared output schema.
var coreOutputs = map[string]map[string]module.Field{
	"core.exec.run":     execOutput,
	"core.cmd.shell":    execOutput,
	"core.file.present": fileOutput,
	"core.file.rendered": withFields(fileOutput, map[string]module.Field{
		"template": outputField(module.TypeString, "template path rendered"),
	}),
	"core.file.absent": {"path": fileOutput["path"]},
	"core.file.directory": {
		"path": fileOutput["path"],
		"mode": fileOutput["mode"],
	},
	"core.cloud.created": {
		"instances":    outputField(module.TypeList, "the instances: [{name, id, address, sid, provider, profile}]"),
		"created":      outputField(module.TypeStrList, "names of the instances this task created"),
		"would_create": outputField(module.TypeStrList, "check mode: names it would create"),
	},
	"core.cloud.absent": {
		"deleted": outputField(module.TypeStrList, "names of the instances deleted (or to delete in check mode)"),
	},
	"core.http.request": {
		"url":     outputField(module.TypeString, "URL requested"),
		"method":  outputField(module.TypeString, "HTTP method sent"),
		"headers": outputField(module.TypeMap, "response headers, lower-case names"),
		"json":    outputField(module.TypeAny, "the response body decoded, when it is JSON"),
	},
	"core.pkg.installed": {
		"installed":       outputField(module.TypeMap, "package name → installed version"),
		"cache_refreshed": outputField(module.TypeBool, "the package index was refreshed first (update_cache); a refresh alone is not a change"),
	},
	"core.pkg.removed": {
		"removed": outputField(module.TypeStrList, "packages removed (or to remove in check mode)"),
	},
	"core.service.running":   serviceOutput,
	"core.service.stopped":   serviceOutput,
	"core.service.restarted": serviceOutput,
	"core.service.reloaded":  serviceOutput,
	"core.service.enabled":   serviceOutput,
	"core.service.state":     serviceOutput,
	"core.system.rebooted": {
		"previous_boot_id": outputField(module.TypeString, "the boot id before the reboot"),
		"boot_id":          outputField(module.TypeString, "the boot id after it, as the soul reported on its return"),
		"reason":           outputField(module.TypeString, "why"),
	},
	"core.sysctl.present": {
		"name":     outputField(module.TypeString, "sysctl key"),
		"value":    outputField(module.TypeString, "wanted value, normalized"),
		"previous": outputField(module.TypeString, "live value before the task"),
		"file":     outputField(module.TypeString, "the persisted /etc/sysctl.d file"),
	},
	"core.user.present": {
		"name":   outputField(module.TypeString, "user name"),
		"uid":    outputField(module.TypeInt, "numeric uid"),
		"gid":    outputField(module.TypeInt, "primary gid"),
		"home":   outputField(module.TypeString, "home directory"),
		"shell":  outputField(module.TypeString, "login shell"),
		"groups": outputField(module.TypeStrList, "supplementary groups"),
	},
	"core.group.present": {
		"name": outputField(module.TypeString, "group name"),
		"gid":  outputField(module.TypeInt, "numeric gid"),
	},
	"core.test.ping":  {},
	"core.test.echo":  {"message": outputField(module.TypeAny, "the message param, unchanged")},
	"core.test.sleep": {},
	"core.test.fail":  {},
}

func withFields(a, b map[string]module.Field) map[string]module.Field {
	out := make(map[string]module.Field, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
