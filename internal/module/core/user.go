package core

import "github.com/soulstack/soulstack/internal/module"

func init() {
	register("core.user.present", module.Schema{
		Params: map[string]module.Param{
			"name":   str(true, "user name"),
			"uid":    typed(module.TypeInt, "numeric uid"),
			"group":  str(false, "primary group"),
			"groups": typed(module.TypeStrList, "supplementary groups"),
			"shell":  str(false, "login shell"),
			"home":   str(false, "home directory"),
			"system": typed(module.TypeBool, "system account"),
		},
		Unconfinable: true,
	}, notImplemented("core.user.present"))
	register("core.group.present", module.Schema{
		Params: map[string]module.Param{
			"name":   str(true, "group name"),
			"gid":    typed(module.TypeInt, "numeric gid"),
			"system": typed(module.TypeBool, "system group"),
		},
		Unconfinable: true,
	}, notImplemented("core.group.present"))
}
