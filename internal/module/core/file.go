package core

import "github.com/soulstack/soulstack/internal/module"

func fileParams(extra map[string]module.Param) map[string]module.Param {
	p := map[string]module.Param{
		"path":  str(true, "absolute path of the file"),
		"mode":  str(false, `octal mode as a string, e.g. "0644"`),
		"owner": str(false, "owner user name or uid"),
		"group": str(false, "group name or gid"),
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func init() {
	register("core.file.present", module.Schema{
		Params: fileParams(map[string]module.Param{"content": str(false, "file content")}),
	}, notImplemented("core.file.present"))
	register("core.file.rendered", module.Schema{
		Params: fileParams(map[string]module.Param{
			"template": str(true, "template path relative to the scenario or destiny directory"),
			"vars":     typed(module.TypeMap, "extra template data"),
		}),
	}, notImplemented("core.file.rendered"))
	register("core.file.absent", module.Schema{
		Params: map[string]module.Param{"path": str(true, "path to remove")},
	}, notImplemented("core.file.absent"))
	register("core.file.directory", module.Schema{
		Params: fileParams(nil),
	}, notImplemented("core.file.directory"))
}
