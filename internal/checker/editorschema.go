package checker

import (
	"sort"

	"github.com/soulstack/soulstack/internal/editorschema/schemaobj"
)

// The key lists of a procedure, which ParseProcedure accepts (and no
// other) and from which ProcedureSchema builds the editor schema.
var (
	procedureKeys = []string{"config", "vars", "steps"}
	configKeys    = []string{"run-on-vip", "timeout"}
	varKeys       = []string{"type", "default", "visibility", "secret", "default_secret"}
	stepKeys      = []string{"conditions", "action"}
	conditionKeys = []string{"apicall", "const", "expect", "attempts", "on-error", "log"}
	expectKeys    = []string{"filter", "op", "value"}
	attemptsKeys  = []string{"min", "max", "interval", "fast-poll"}
	onErrorKeys   = []string{"error-type", "handler"}
	actionKeys    = []string{"apicall", "parse", "log"}
	parseKeys     = []string{"filter", "op", "var"}
	logKeys       = []string{"before", "after"}
)

// ProcedureSchemaFile is the procedure schema's file name under
// docs/schemas/.
const ProcedureSchemaFile = "procedure.schema.json"

type js = map[string]any

// closed is an object whose properties are exactly keys (schemaobj.Closed).
func closed(where string, keys []string, props js) js {
	return schemaobj.Closed("procedure schema", where, keys, props)
}

func strDesc(desc string) js { return js{"type": "string", "description": desc} }

// ProcedureSchema is the JSON Schema (draft-07) of a Checker procedure,
// built from the key lists, var types, ops and handlers ParseProcedure
// checks. id is its $id.
func ProcedureSchema(id string) map[string]any {
	types := make([]any, len(varTypes))
	for i, t := range varTypes {
		types[i] = t
	}
	var ops []any
	for op := range knownOps {
		ops = append(ops, string(op))
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].(string) < ops[j].(string) })
	calls := js{"description": "a soulctl command (or an external one bound in the Keeper's config), or a list of them run in parallel", "anyOf": []any{
		js{"type": "string"},
		js{"type": "array", "minItems": 1, "items": js{"type": "string"}},
	}}
	logObj := closed("log", logKeys, js{
		"before": strDesc("logged before (templated)"),
		"after":  strDesc("logged after (templated)"),
	})
	expect := closed("expect", expectKeys, js{
		"filter": strDesc("JMESPath over the result"),
		"op":     js{"enum": ops, "description": "how the filtered value compares with value"},
		"value":  js{"description": "the value compared with"},
	})
	expect["required"] = []any{"filter", "op", "value"}
	attempts := closed("attempts", attemptsKeys, js{
		"min":       js{"type": "integer", "minimum": 1, "maximum": MaxAttempts, "description": "consecutive attempts that must hold (default 1)"},
		"max":       js{"type": "integer", "minimum": 1, "maximum": MaxAttempts, "description": "attempts at most"},
		"interval":  js{"type": "number", "minimum": 0, "description": "seconds between attempts"},
		"fast-poll": js{"type": "boolean", "description": "allow an interval below " + MinInterval.String()},
	})
	onError := closed("on-error", onErrorKeys, js{
		"error-type": js{"enum": []any{ErrAttemptsLimitReached}},
		"handler":    js{"enum": []any{HandlerExit, HandlerContinue}, "description": "_exit ends the task successfully, _continue skips this step's action"},
	})
	onError["required"] = []any{"error-type", "handler"}
	cond := closed("condition", conditionKeys, js{
		"apicall":  calls,
		"const":    js{"description": "a templated value instead of a command"},
		"expect":   js{"type": "array", "minItems": 1, "items": expect, "description": "all must hold"},
		"attempts": attempts,
		"on-error": js{"type": "array", "items": onError},
		"log":      logObj,
	})
	cond["required"] = []any{"expect"}
	cond["oneOf"] = []any{js{"required": []any{"apicall"}}, js{"required": []any{"const"}}}
	parse := closed("parse", parseKeys, js{
		"filter": strDesc("JMESPath over the action's result"),
		"op":     js{"enum": []any{ParseStore, ParsePush}, "description": "store replaces, push appends"},
		"var":    strDesc("a declared var (or @deps for push)"),
	})
	parse["required"] = []any{"filter", "op", "var"}
	action := closed("action", actionKeys, js{
		"apicall": calls,
		"parse":   js{"type": "array", "items": parse},
		"log":     js{"anyOf": []any{js{"type": "string"}, logObj}},
	})
	action["minProperties"] = 1
	action["dependencies"] = js{"parse": []any{"apicall"}}
	step := closed("step", stepKeys, js{
		"conditions": js{"type": "array", "minItems": 1, "items": cond, "description": "gates evaluated in order"},
		"action":     action,
	})
	step["anyOf"] = []any{js{"required": []any{"conditions"}}, js{"required": []any{"action"}}}
	v := closed("var", varKeys, js{
		"type":           js{"enum": types},
		"default":        js{"description": "the value when not given at launch"},
		"visibility":     js{"enum": []any{"public", "private"}, "description": "public vars may be set at launch"},
		"secret":         js{"type": "boolean", "description": "masked in logs and results"},
		"default_secret": strDesc("a secret of the Keeper's store giving the default"),
	})
	v["required"] = []any{"type"}
	v["not"] = js{"required": []any{"secret", "default"}, "properties": js{"secret": js{"const": true}}}
	config := closed("config", configKeys, js{
		"run-on-vip": js{"type": "boolean", "description": "run only on the leader Keeper"},
		"timeout":    js{"type": "number", "exclusiveMinimum": 0, "description": "seconds for the whole task"},
	})
	root := closed("the procedure", procedureKeys, js{
		"config": config,
		"vars":   js{"type": "object", "propertyNames": js{"pattern": declNameRE.String()}, "additionalProperties": v},
		"steps":  js{"type": "object", "additionalProperties": step, "description": "step name → {conditions, action}, run in YAML order"},
	})
	root["required"] = []any{"steps"}
	root["$schema"] = "http://json-schema.org/draft-07/schema#"
	root["$id"] = id
	root["title"] = "Soul Stack Checker procedure"
	return root
}
