package core

import "github.com/soulstack/soulstack/internal/module"

func init() {
	register("core.pkg.installed", module.Schema{
		Params: map[string]module.Param{
			"name":    str(false, "package to install"),
			"names":   typed(module.TypeStrList, "packages to install"),
			"version": str(false, "exact version wanted (apt: 7:7.0.15-1~deb12u1)"),
		},
		AtLeastOne:   [][]string{{"name", "names"}},
		Unconfinable: true,
	}, notImplemented("core.pkg.installed"))
	register("core.pkg.removed", module.Schema{
		Params: map[string]module.Param{
			"name":  str(false, "package to remove"),
			"names": typed(module.TypeStrList, "packages to remove"),
			"purge": typed(module.TypeBool, "also remove configuration files"),
		},
		AtLeastOne:   [][]string{{"name", "names"}},
		Unconfinable: true,
	}, notImplemented("core.pkg.removed"))
}
