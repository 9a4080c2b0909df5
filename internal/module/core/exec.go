package core

import "github.com/soulstack/soulstack/internal/module"

func init() {
	register("core.exec.run", module.Schema{
		Params: map[string]module.Param{
			"command": str(false, "command line run by /bin/sh -c"),
			"cmd":     str(false, "program to run with args as argv, no shell"),
			"args":    typed(module.TypeStrList, "argv after cmd"),
			"env":     typed(module.TypeMap, "extra environment variables"),
			"cwd":     str(false, "working directory"),
			"stdin":   str(false, "data written to stdin"),
		},
		ExactlyOne: [][]string{{"command", "cmd"}},
	}, notImplemented("core.exec.run"))
	register("core.cmd.shell", module.Schema{
		Params: map[string]module.Param{
			"cmd": str(true, "command line run by /bin/sh -c"),
			"env": typed(module.TypeMap, "extra environment variables"),
			"cwd": str(false, "working directory"),
		},
	}, notImplemented("core.cmd.shell"))
}
