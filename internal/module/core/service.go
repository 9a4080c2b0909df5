package core

import "github.com/soulstack/soulstack/internal/module"

func init() {
	for _, op := range []string{"running", "stopped", "restarted", "reloaded", "enabled"} {
		name := "core.service." + op
		register(name, module.Schema{
			Params:       map[string]module.Param{"name": str(true, "service name (systemd unit or /etc/init.d script)")},
			Unconfinable: true,
		}, notImplemented(name))
	}
}
