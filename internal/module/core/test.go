package core

import "github.com/soulstack/soulstack/internal/module"

func init() {
	register("core.test.ping", module.Schema{Params: map[string]module.Param{}, ReadOnly: true}, notImplemented("core.test.ping"))
	register("core.test.echo", module.Schema{Params: map[string]module.Param{"message": {Type: module.TypeAny, Description: "value echoed back as stdout and data.message"}}, ReadOnly: true}, notImplemented("core.test.echo"))
	register("core.test.sleep", module.Schema{Params: map[string]module.Param{"duration": str(true, "how long, e.g. 2s")}, ReadOnly: true}, notImplemented("core.test.sleep"))
	register("core.test.fail", module.Schema{Params: map[string]module.Param{"message": str(false, "failure message")}}, notImplemented("core.test.fail"))
}
