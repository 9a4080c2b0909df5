package dsl

import (
	"slices"
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/editorschema/schemaobj"
	"github.com/soulstack/soulstack/internal/module"
)

// The editor schemas (JSON Schema, draft-07, the draft editors' YAML
// language servers know best) of the service repository's files. They are
// built from the key lists the strict parser accepts (commonTaskKeys,
// scenarioTopKeys, healthKeys, …), from its regular expressions and from
// the module registry's params schemas, so an editor completes and checks
// what the validator accepts. objectSchema refuses a key list and a
// description table that disagree, so a key added to the parser without
// its schema fails TestEditorSchemasCoverParser (and `go generate`).
//
// A schema is never stricter than the validator: where a check needs more
// than JSON Schema can say (CEL types, registers of earlier tasks, files
// that exist), the schema accepts and the validator reports.

// EditorSchema names one schema document.
type EditorSchema struct {
	// File is the schema's file name under docs/schemas/.
	File string
	// Title says what it describes.
	Title string
	// Globs are the repository paths it applies to (for the editor's
	// settings and for soulctl scenario schema).
	Globs []string
	// Schema is the document.
	Schema map[string]any
}

// Schema file names.
const (
	SchemaService  = "service.schema.json"
	SchemaScenario = "scenario.schema.json"
	SchemaDestiny  = "destiny.schema.json"
	SchemaTasks    = "tasks.schema.json"
	SchemaEssence  = "essence.schema.json"
	SchemaHealth   = "health.schema.json"
	SchemaRule     = "rule.schema.json"
)

// jsonSchemaDraft is the $schema of every document.
const jsonSchemaDraft = "http://json-schema.org/draft-07/schema#"

type js = map[string]any

var (
	// serviceKeys are the keys of service.yml.
	serviceKeys = []string{"name", "description", "state_schema"}
	// retryKeys are the keys of a task's retry:.
	retryKeys = []string{"count", "delay", "until"}
	// applyKeys are the keys of a task's apply:.
	applyKeys = []string{"destiny", "input"}
	// stateChangesKeys are the keys of a scenario's state_changes:.
	stateChangesKeys = []string{"sets", "unsets"}
)

// durationPattern is what time.ParseDuration reads, as the DSL writes it
// (a number and a unit, repeated; or 0).
const durationPattern = `^(0|([0-9]*\.?[0-9]+(ns|us|µs|μs|ms|s|m|h))+)$`

// wholeExprPattern is a string that is one ${ } expression, whose type is
// known only when it runs: it fits a param of any type.
const wholeExprPattern = `^\s*\$\{[\s\S]*\}\s*$`

func str(desc string) js { return js{"type": "string", "description": desc} }

func boolean(desc string) js { return js{"type": "boolean", "description": desc} }

func duration(desc string) js {
	return js{"type": "string", "pattern": durationPattern, "description": desc + " (a duration: 30s, 5m, 1h30m)"}
}

// predicate is bare CEL (or true/false), never a ${ } template.
func predicate(desc string) js {
	return js{"description": desc + " (bare CEL, no ${ }, or true/false)", "anyOf": []any{
		js{"type": "boolean"},
		js{"type": "string", "not": js{"pattern": `\$\{`}},
	}}
}

func pattern(re, desc string) js { return js{"type": "string", "pattern": re, "description": desc} }

// objectSchema is a closed object whose properties are exactly keys
// (schemaobj.Closed).
func objectSchema(where string, keys []string, props js) js {
	return schemaobj.Closed("editor schema", where, keys, props)
}

func covenList(desc string) js {
	return js{"type": "array", "minItems": 1, "items": js{"type": "string", "pattern": covenRE.String()}, "description": desc}
}

func requisite(desc string) js {
	return js{"description": desc, "anyOf": []any{
		js{"type": "string"},
		js{"type": "array", "minItems": 1, "items": js{"type": "string"}},
	}}
}

func varsFilesSchema() js {
	paths := js{"type": "string"}
	return js{
		"description": "files of vars (paths relative to the scenario or destiny, ${ } allowed); an entry that is a list names alternatives, the first that exists wins",
		"type":        []any{"array", "null"},
		"items":       js{"anyOf": []any{paths, js{"type": "array", "minItems": 1, "items": paths}}},
	}
}

func inputSchema() js {
	types := make([]any, len(validInputTypes))
	for i, t := range validInputTypes {
		types[i] = string(t)
	}
	spec := objectSchema("input", inputSpecKeys, js{
		"type":        js{"enum": types, "description": "the input's type"},
		"default":     js{"description": "the value when the input is not given (a literal, no ${ })"},
		"required":    boolean("the run is refused without this input"),
		"description": str("what the input is for"),
		"secret":      boolean("masks the value (and values rendered from it) in logs, results and the UI"),
	})
	spec["required"] = []any{"type"}
	return js{
		"description":          "typed parameters: name → {type, default, required, description, secret}",
		"type":                 []any{"object", "null"},
		"propertyNames":        js{"pattern": identRE.String()},
		"additionalProperties": spec,
	}
}

// taskSchema is a task of a scenario (scenario true) or of a destiny.
func taskSchema(scenario bool) js {
	self := "#/definitions/task"
	props := js{
		"name":      str("human name, shown in results"),
		"module":    js{"type": "string", "description": "the module to call (core.…, or service.<name> for a module of modules/<name>/)"},
		"params":    js{"type": []any{"object", "null"}, "description": "the module's params (values may hold ${ })"},
		"block":     js{"type": []any{"array", "null"}, "items": js{"$ref": self}, "description": "tasks run in order on the same hosts"},
		"include":   pattern(`^[^/\\]+\.ya?ml$`, "a neighbour file of tasks to splice in"),
		"vars":      js{"type": []any{"object", "null"}, "propertyNames": js{"pattern": identRE.String()}, "description": "task-local values (vars.*)"},
		"register":  js{"type": "string", "pattern": identRE.String(), "not": js{"const": "self"}, "description": "name under which the task's results are stored (register.<name>)"},
		"when":      predicate("run the task on a host only when this holds there"),
		"onchanges": requisite("run only where one of these registered tasks changed something"),
		"onfail":    requisite("run only where one of these registered tasks failed"),
		"require":   requisite("run only where these registered tasks succeeded"),
		"loop": js{"description": "run once per element (item, loop_index): a list, or one ${ } expression yielding a list", "anyOf": []any{
			js{"type": "array", "maxItems": DefaultMaxLoopItems},
			js{"type": "string", "pattern": `\$\{`},
		}},
		"retry": func() js {
			r := objectSchema("retry", retryKeys, js{
				"count": js{"type": "integer", "minimum": 1, "description": "attempts at most"},
				"delay": duration("time between attempts"),
				"until": predicate("stop once this holds (sees register.self)"),
			})
			r["required"] = []any{"count"}
			r["description"] = "repeat the task until until: holds"
			return r
		}(),
		"failed_when":  predicate("overrides the module's own failed"),
		"changed_when": predicate("overrides the module's own changed (false makes a probe)"),
		"timeout":      duration("fails the task on a host that exceeds it"),
		"vars_files":   varsFilesSchema(),
	}
	keys := slices.Clone(commonTaskKeys)
	if scenario {
		keys = append(keys, scenarioTaskKeys...)
		props["on"] = js{"description": "stable target: keeper, or a list of covens (members carrying every one); omit for all members", "anyOf": []any{
			js{"const": "keeper"},
			covenList("covens"),
		}}
		props["where"] = predicate("volatile per-host filter over the on: target")
		apply := objectSchema("apply", applyKeys, js{
			"destiny": js{"type": "string", "pattern": unitNameRE.String(), "description": "a directory under destiny/"},
			"input":   js{"type": []any{"object", "null"}, "description": "the destiny's input (values may hold ${ })"},
		})
		apply["required"] = []any{"destiny"}
		apply["description"] = "run an isolated destiny with the given input"
		props["apply"] = apply
		props["serial"] = js{"description": "rolling waves: hosts per wave, or \"P%\" of the target", "anyOf": []any{
			js{"type": "integer", "minimum": 1},
			js{"type": "string", "pattern": `^\s*\+?([0-9]+|[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?\s*%)\s*$`},
		}}
		props["run_once"] = boolean("run on exactly one host of the target")
		props["delegate"] = covenList("inside a serial: block: run the task, for each host of the wave, on the members carrying these covens")
	}
	t := objectSchema("task", keys, props)
	var actions []any
	for _, k := range actionKeys {
		if k == "apply" && !scenario {
			continue
		}
		actions = append(actions, js{"required": []any{k}})
	}
	t["oneOf"] = actions
	t["dependencies"] = js{"params": []any{"module"}}
	if scenario {
		t["not"] = js{"required": []any{"serial", "run_once"}}
	}
	t["allOf"] = moduleBranches(scenario, false)
	return t
}

// moduleBranches are, per registered module, the if/then that give a
// task's params the module's own schema.
func moduleBranches(scenario, health bool) []any {
	var out []any
	for _, name := range module.Names() {
		m, _ := module.Lookup(name)
		s := m.Schema()
		if !allowedModule(s, name, scenario, health) {
			continue
		}
		then := js{"properties": js{"params": js{"$ref": "#/definitions/params-" + name}}}
		if needsParams(s) {
			then["required"] = []any{"params"}
		}
		if s.KeeperSide {
			then["required"] = append(asList(then["required"]), "on")
			then["properties"].(js)["on"] = js{"const": "keeper"}
		}
		if (s.Unconfinable || s.RunsProgram) && scenario {
			then["properties"].(js)["on"] = js{"not": js{"const": "keeper"}}
		}
		out = append(out, js{
			"if":   js{"properties": js{"module": js{"const": name}}, "required": []any{"module"}},
			"then": then,
		})
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func allowedModule(s module.Schema, name string, scenario, health bool) bool {
	switch {
	case health:
		return IsHealthModule(name)
	case s.KeeperSide:
		return scenario
	}
	return true
}

func needsParams(s module.Schema) bool {
	if len(s.ExactlyOne) > 0 || len(s.AtLeastOne) > 0 {
		return true
	}
	for _, p := range s.Params {
		if p.Required {
			return true
		}
	}
	return false
}

// moduleNames is the schema of module: the registered names (with their
// summaries for completion) or a custom module of the repository.
func moduleNames(scenario, health bool) js {
	var names, descs []any
	for _, name := range module.Names() {
		m, _ := module.Lookup(name)
		if !allowedModule(m.Schema(), name, scenario, health) {
			continue
		}
		names = append(names, name)
		descs = append(descs, m.Schema().Summary)
	}
	alts := []any{js{"enum": names, "enumDescriptions": descs}}
	if !health {
		alts = append(alts, js{"type": "string", "pattern": `^service\.[A-Za-z0-9_][A-Za-z0-9_.-]*$`, "description": "a custom module of modules/<name>/"})
	}
	return js{"type": "string", "description": "the module to call", "anyOf": alts}
}

// paramDefinitions are the params schemas of the modules, by
// "params-<module>".
func paramDefinitions(scenario, health bool) js {
	defs := js{}
	for _, name := range module.Names() {
		m, _ := module.Lookup(name)
		s := m.Schema()
		if !allowedModule(s, name, scenario, health) {
			continue
		}
		defs["params-"+name] = paramsSchema(name, s)
	}
	return defs
}

// paramsSchema is the JSON Schema of one module's params, from the same
// module.Schema the validator checks them against.
func paramsSchema(name string, s module.Schema) js {
	props := js{}
	var required []any
	names := make([]string, 0, len(s.Params))
	for k := range s.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p := s.Params[k]
		props[k] = paramSchema(p)
		if p.Required {
			required = append(required, k)
		}
	}
	out := js{
		"type":                 []any{"object", "null"},
		"description":          strings.TrimSpace(name + ": " + s.Summary),
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		out["required"] = required
	}
	var all []any
	// A param given as null counts as not given.
	given := func(k string) js {
		return js{"required": []any{k}, "properties": js{k: js{"not": js{"type": "null"}}}}
	}
	for _, g := range s.ExactlyOne {
		var alts []any
		for _, k := range g {
			alts = append(alts, given(k))
		}
		all = append(all, js{"oneOf": alts})
	}
	for _, g := range s.AtLeastOne {
		var alts []any
		for _, k := range g {
			alts = append(alts, given(k))
		}
		all = append(all, js{"anyOf": alts})
	}
	if len(all) > 0 {
		out["allOf"] = all
	}
	return out
}

// paramSchema is one param: its declared type, or a whole ${ } expression
// (typed when it runs), or null (not given) unless it is required.
func paramSchema(p module.Param) js {
	var typed js
	switch p.Type {
	case module.TypeString:
		typed = js{"type": "string"}
	case module.TypeInt:
		typed = js{"type": "integer"}
	case module.TypeNumber:
		typed = js{"type": "number"}
	case module.TypeBool:
		typed = js{"type": "boolean"}
	case module.TypeList:
		typed = js{"type": "array"}
	case module.TypeStrList:
		typed = js{"type": "array", "items": js{"type": "string"}}
	case module.TypeMap:
		typed = js{"type": "object"}
	default:
		typed = js{}
	}
	out := js{}
	if p.Description != "" {
		out["description"] = p.Description
	}
	if p.Default != nil {
		out["default"] = p.Default
	}
	if len(typed) == 0 {
		return out
	}
	if !p.Required {
		typed["type"] = []any{typed["type"], "null"}
	}
	if p.Type == module.TypeString {
		for k, v := range typed {
			out[k] = v
		}
		return out
	}
	out["anyOf"] = []any{typed, js{"type": "string", "pattern": wholeExprPattern}}
	return out
}

// unitSchema is scenario/<name>/main.yml (scenario) or destiny/<name>/main.yml.
func unitSchema(scenario bool) js {
	props := js{
		"description": str("what it does"),
		"input":       inputSchema(),
		"tasks":       js{"type": "array", "items": js{"$ref": "#/definitions/task"}, "description": "the tasks, in order"},
		"vars_files":  varsFilesSchema(),
	}
	keys := destinyTopKeys
	if scenario {
		keys = scenarioTopKeys
		sc := objectSchema("state_changes", stateChangesKeys, js{
			"sets":   js{"type": []any{"object", "null"}, "description": "state key → value committed when the run succeeds (values may hold ${ })"},
			"unsets": js{"type": []any{"array", "null"}, "items": js{"type": "string"}, "description": "state keys removed when the run succeeds"},
		})
		sc["type"] = []any{"object", "null"}
		sc["description"] = "what a successful run commits into incarnation.state"
		props["state_changes"] = sc
	} else {
		props["output"] = js{"type": []any{"object", "null"}, "description": "values the destiny returns (strings may hold ${ }), read through register on the applying task"}
	}
	u := objectSchema("unit", keys, props)
	u["required"] = []any{"tasks"}
	return u
}

func document(id, title string, root js, defs js) js {
	root["$schema"] = jsonSchemaDraft
	root["$id"] = id
	root["title"] = title
	if len(defs) > 0 {
		root["definitions"] = defs
	}
	return root
}

func taskDefinitions(scenario bool) js {
	defs := paramDefinitions(scenario, false)
	t := taskSchema(scenario)
	t["properties"].(js)["module"] = moduleNames(scenario, false)
	defs["task"] = t
	return defs
}

// EditorSchemas returns the JSON Schemas of a service repository's files,
// built from the parser's key lists and the registered modules (register
// the modules first: import internal/module/core). baseURL prefixes each
// document's $id ("" leaves the bare file name).
func EditorSchemas(baseURL string) []EditorSchema {
	id := func(f string) string { return baseURL + f }

	svc := objectSchema("service.yml", serviceKeys, js{
		"name":        pattern(unitNameRE.String(), "the service's name"),
		"description": str("what the service is"),
		"state_schema": js{
			"description": "JSON Schema of incarnation.state; a property marked secret: true holds a secret's derivative",
			"type":        []any{"object", "null"},
			"properties": js{"properties": js{
				"type":                 "object",
				"additionalProperties": js{"properties": js{"secret": js{"type": "boolean"}}},
			}},
			"not": js{"required": []any{"secret"}},
		},
	})
	svc["required"] = []any{"name"}

	health := objectSchema("health check", healthKeys, js{
		"name":        str("must equal the file name (drop it)"),
		"description": str("what the check watches"),
		"module":      moduleNames(false, true),
		"params":      js{"type": []any{"object", "null"}, "description": "the module's params (values may hold ${ })"},
		"every":       duration("how often the souls run the check"),
		"timeout":     duration("a run of the check longer than this is UNKNOWN"),
		"on":          covenList("only members carrying every listed coven"),
		"where":       predicate("only members where this holds over stable facts"),
		"after_runs":  boolean("also run the check right after every run of the incarnation"),
	})
	health["required"] = []any{"module"}
	health["allOf"] = moduleBranches(false, true)

	return []EditorSchema{
		{File: SchemaService, Title: "Soul Stack service.yml", Globs: []string{"service.yml"},
			Schema: document(id(SchemaService), "Soul Stack service manifest (service.yml)", svc, nil)},
		{File: SchemaScenario, Title: "Soul Stack scenario", Globs: []string{"scenario/*/main.yml"},
			Schema: document(id(SchemaScenario), "Soul Stack scenario (scenario/<name>/main.yml)", unitSchema(true), taskDefinitions(true))},
		{File: SchemaDestiny, Title: "Soul Stack destiny", Globs: []string{"destiny/*/main.yml"},
			Schema: document(id(SchemaDestiny), "Soul Stack destiny (destiny/<name>/main.yml)", unitSchema(false), taskDefinitions(false))},
		{File: SchemaTasks, Title: "Soul Stack included tasks", Globs: []string{"scenario/*/tasks/*.yml"},
			Schema: document(id(SchemaTasks), "Soul Stack task list included by a scenario (include: <file>.yml)",
				js{"type": "array", "items": js{"$ref": "#/definitions/task"}}, taskDefinitions(true))},
		{File: SchemaEssence, Title: "Soul Stack essence", Globs: []string{"essence/*.yaml", "essence/*.yml"},
			Schema: document(id(SchemaEssence), "Soul Stack essence (essence/<name>.yaml)",
				js{"type": []any{"object", "null"}, "description": "parameters (essence.*): _default.yaml, then covens, then the incarnation, deep-merged"}, nil)},
		{File: SchemaHealth, Title: "Soul Stack health check", Globs: []string{"health/*.yml", "health/*.yaml"},
			Schema: document(id(SchemaHealth), "Soul Stack health check (health/<name>.yml)", health, paramDefinitions(false, true))},
		{File: SchemaRule, Title: "Soul Stack rule", Globs: []string{"rules/*.yml", "rules/*.yaml"},
			Schema: document(id(SchemaRule), "Soul Stack rule (rules/<name>.yml)", ruleSchema(), nil)},
	}
}

// ruleSchema is rules/<name>.yml (and a Keeper-wide rule).
func ruleSchema() js {
	kinds := EventKinds()
	events := make([]any, len(kinds))
	for i, k := range kinds {
		events[i] = k
	}
	actions := js{}
	var one []any
	for _, kind := range []string{ActionRun, ActionProcedure, ActionNotify} {
		var a js
		switch kind {
		case ActionRun:
			a = objectSchema("do.run", ruleActionKeys[kind], js{
				"scenario":    str("the scenario to run"),
				"incarnation": str("the incarnation (Keeper-wide rules only; ${ event.* } allowed)"),
				"input":       js{"type": []any{"object", "null"}, "description": "the scenario's input (values may hold ${ event.* })"},
				"check":       boolean("run in check mode"),
			})
			a["required"] = []any{"scenario"}
		case ActionProcedure:
			a = objectSchema("do.procedure", ruleActionKeys[kind], js{
				"name": str("the Checker procedure"),
				"vars": js{"type": []any{"object", "null"}, "description": "its vars (values may hold ${ event.* })"},
			})
			a["required"] = []any{"name"}
		case ActionNotify:
			a = objectSchema("do.notify", ruleActionKeys[kind], js{
				"endpoint":  str("a notification endpoint an admin configured"),
				"endpoints": js{"type": []any{"array", "null"}, "items": js{"type": "string"}, "description": "several endpoints"},
				"subject":   str("the subject (${ event.* } allowed)"),
				"message":   str("the text sent (${ event.* } allowed)"),
			})
			a["required"] = []any{"message"}
			a["anyOf"] = []any{js{"required": []any{"endpoint"}}, js{"required": []any{"endpoints"}}}
		}
		actions[kind] = a
		one = append(one, js{"required": []any{kind}})
	}
	if len(actions) != len(ruleActionKeys) {
		panic("editor schema of do: an action of ruleActionKeys has no schema")
	}
	bare := func(desc string) js {
		return js{"type": "string", "not": js{"pattern": `\$\{`}, "description": desc + " (bare CEL over event.*)"}
	}
	r := objectSchema("rule", ruleKeys, js{
		"name":        str("must equal the file name (drop it)"),
		"description": str("what the rule is for"),
		"on":          js{"enum": events, "description": "the event kind the rule reacts to"},
		"if":          bare("fire only when this holds"),
		"do": js{"type": "object", "properties": actions, "additionalProperties": false,
			"minProperties": 1, "maxProperties": 1, "oneOf": one, "description": "exactly one action: run, procedure or notify"},
		"cooldown":       duration("quiet time after a firing (0s for none)"),
		"max_per_hour":   js{"type": "integer", "minimum": 1, "maximum": MaxRulePerHour, "description": "firings per hour at most"},
		"max_concurrent": js{"type": "integer", "minimum": 1, "maximum": MaxRuleConcurrent, "description": "firings running at once at most"},
		"dedup":          str("the incident key (${ event.* })"),
		"resolve_if":     bare("closes the incident"),
		"dry_run":        boolean("record what the rule would do, do nothing"),
	})
	r["required"] = []any{"on", "do", "cooldown", "max_per_hour", "max_concurrent"}
	return r
}
