package core

import "github.com/soulstack/soulstack/internal/module"

func init() {
	register("core.cloud.created", module.Schema{
		Params: map[string]module.Param{
			"provider": str(true, "cloud provider registered through the Operator API"),
			"profile":  str(true, "instance profile"),
			"count":    typed(module.TypeInt, "number of instances"),
			"names":    typed(module.TypeStrList, "instance names"),
		},
		KeeperSide: true,
	}, notImplemented("core.cloud.created"))
	register("core.http.request", module.Schema{
		Params: map[string]module.Param{
			"url":     str(true, "URL"),
			"method":  str(false, "HTTP method (GET)"),
			"body":    {Type: module.TypeAny, Description: "request body; maps and lists are sent as JSON"},
			"headers": typed(module.TypeMap, "request headers"),
			"status":  typed(module.TypeInt, "expected status code (default 2xx)"),
		},
	}, notImplemented("core.http.request"))
}
