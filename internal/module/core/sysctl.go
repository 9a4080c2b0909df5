package core

import "github.com/soulstack/soulstack/internal/module"

func init() {
	register("core.sysctl.present", module.Schema{
		Params: map[string]module.Param{
			"name":    str(true, "sysctl key, e.g. net.core.somaxconn"),
			"value":   {Type: module.TypeAny, Required: true, Description: "wanted value"},
			"persist": {Type: module.TypeBool, Default: true, Description: "also write /etc/sysctl.d/"},
		},
		Unconfinable: true,
	}, notImplemented("core.sysctl.present"))
}
