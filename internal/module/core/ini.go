package core

import (
	"context"
	"fmt"
	"reflect"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.file.ini", module.Schema{
		Summary: "Ensure an option of an INI file has the given value(s), or a section or option is absent, editing only those lines",
		Params: editParams(map[string]module.Param{
			"section":                str(false, "section name; omitted (or null): the options before the first section header. Added when missing (state: present)"),
			"option":                 str(false, "option name; omitted: the whole section (add an empty one with allow_no_value: true, or remove it with state: absent)"),
			"value":                  typed(module.TypeAny, "the value of option (a string or a number); the same as values: [value]"),
			"values":                 typed(module.TypeList, "values of an option that may repeat (one \"option = v\" line each, in this order); with exclusive: false they are added to the ones already there"),
			"state":                  {Type: module.TypeString, Default: "present", Description: "present or absent", Check: checkIniState},
			"exclusive":              {Type: module.TypeBool, Default: true, Description: "present: the option gets exactly value(s), other lines of it are removed; absent: every line of option goes. false: only the given value(s) are added or removed"},
			"allow_no_value":         {Type: module.TypeBool, Default: false, Description: "allow an option without value and without \"=\" (\"skip-name-resolve\"); needed for state: present without value(s)"},
			"no_extra_spaces":        {Type: module.TypeBool, Default: false, Description: "write \"option=value\" instead of \"option = value\""},
			"ignore_spaces":          {Type: module.TypeBool, Default: false, Description: "leave a line alone when it differs only in the spaces around \"=\""},
			"modify_inactive_option": {Type: module.TypeBool, Default: true, Description: "reuse a commented-out line of the option (\"# option = x\" or \";option=x\") for the new value; false leaves such lines as documentation and adds a new line"},
			"section_has_values":     typed(module.TypeList, "among several sections of the same name, pick the first holding these options: a list of {option, value} or {option, values}; with state: present a new section gets them, with state: absent that one section is removed"),
			"create":                 {Type: module.TypeBool, Default: true, Description: "create the file when it does not exist; false makes a missing file an error"},
			"makedirs":               {Type: module.TypeBool, Default: true, Description: "with create, create missing parent directories (0755), as Ansible's ini_file does"},
		}),
		AtLeastOne: [][]string{{"section", "option"}},
		Output: withFields(fileOutput, map[string]module.Field{
			"action": outputField(module.TypeString, "what the edit did, in ini_file's words: OK, option added, option changed, section and option added, only section added, section removed"),
		}),
	}, fileIni)
}

func checkIniState(s string) error {
	if s != "present" && s != "absent" {
		return fmt.Errorf("%q is not present or absent", s)
	}
	return nil
}

// fileIni is community.general.ini_file: it sets, adds or removes the
// lines of one option (or a whole section) of an INI file through the
// shared file path (check mode, diff, validate, safe writes, mode/owner).
func fileIni(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	e, create, err := parseIniEdit(a)
	if err != nil {
		return domain.Result{}, err
	}
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	w.makedirs = a.boolean("makedirs", true)
	action := "OK"
	if e.absent && create {
		w.missingOK = w.path + " does not exist; nothing to remove"
	}
	w.edit = func(old []byte, exists bool) ([]byte, error) {
		if !exists && !create {
			return nil, fmt.Errorf("%s does not exist; set create: true (the default) to create it", w.path)
		}
		t := splitIni(old)
		lines, msg := e.apply(t.lines)
		action = msg
		return iniContent(old, t, lines), nil
	}
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["action"] = action
	}
	return res, err
}

// parseIniEdit reads the ini params, with ini_file's rules on which go
// together.
func parseIniEdit(a *args) (iniEdit, bool, error) {
	e := iniEdit{
		section:        a.str("section"),
		option:         a.str("option"),
		exclusive:      a.boolean("exclusive", true),
		noExtraSpaces:  a.boolean("no_extra_spaces", false),
		ignoreSpaces:   a.boolean("ignore_spaces", false),
		allowNoValue:   a.boolean("allow_no_value", false),
		modifyInactive: a.boolean("modify_inactive_option", true),
	}
	create := a.boolean("create", true)
	state := a.str("state")
	if a.err != nil {
		return e, create, a.err
	}
	switch state {
	case "", "present":
	case "absent":
		e.absent = true
	default:
		return e, create, fmt.Errorf("param \"state\": %w", checkIniState(state))
	}
	if a.has("value") && a.has("values") {
		return e, create, fmt.Errorf("params \"value\" and \"values\" are mutually exclusive: give value for one line, values for a repeated option")
	}
	var err error
	if a.has("value") {
		if e.values, err = scalarList("value", []any{a.p["value"]}); err != nil {
			return e, create, err
		}
	} else if e.values, err = scalarList("values", a.p["values"]); err != nil {
		return e, create, err
	}
	if e.hasValues, err = parseIniConds(a.p["section_has_values"]); err != nil {
		return e, create, err
	}
	switch {
	case e.section == "" && e.option == "":
		return e, create, fmt.Errorf("give \"option\", \"section\" or both: without either there is nothing to edit")
	case e.section == "" && e.hasValues != nil:
		return e, create, fmt.Errorf("param \"section_has_values\" chooses among sections named by \"section\"; give section")
	case !e.absent && !e.allowNoValue && len(e.values) == 0:
		return e, create, fmt.Errorf("param \"value\" (or \"values\") is required with state: present, unless allow_no_value: true")
	case e.option == "" && len(e.values) > 0:
		return e, create, fmt.Errorf("param \"value\"/\"values\" needs \"option\"")
	}
	return e, create, nil
}

// scalarList reads a list of strings or numbers (a lone value too) as
// strings; nil items are skipped, as ini_file drops None.
func scalarList(key string, v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("param %q must be a list of strings, got %T", key, v)
	}
	out := make([]string, 0, rv.Len())
	for i := range rv.Len() {
		item := rv.Index(i).Interface()
		if item == nil {
			continue
		}
		s, ok := scalarString(item)
		if !ok {
			return nil, fmt.Errorf("param %q: item %d must be a string or a number, got %T", key, i, item)
		}
		out = append(out, s)
	}
	return out, nil
}

// parseIniConds reads section_has_values: a list of maps with option and
// value or values.
func parseIniConds(v any) ([]iniCond, error) {
	if v == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("param \"section_has_values\" must be a list of {option, value} maps, got %T", v)
	}
	out := make([]iniCond, 0, rv.Len())
	for i := range rv.Len() {
		item := newArgs(nil)
		m := (&args{p: map[string]any{"item": rv.Index(i).Interface()}}).anyMap("item")
		if m == nil {
			return nil, fmt.Errorf("param \"section_has_values\": item %d must be a map with option and value or values", i)
		}
		item.p = m
		for k := range m {
			if k != "option" && k != "value" && k != "values" {
				return nil, fmt.Errorf("param \"section_has_values\": item %d: unknown key %q (accepted: option, value, values)", i, k)
			}
		}
		c := iniCond{option: item.str("option")}
		if item.err != nil || c.option == "" {
			return nil, fmt.Errorf("param \"section_has_values\": item %d needs option, a string", i)
		}
		if item.has("value") && item.has("values") {
			return nil, fmt.Errorf("param \"section_has_values\": item %d: value and values are mutually exclusive", i)
		}
		var err error
		key := fmt.Sprintf("section_has_values[%d].values", i)
		if item.has("value") {
			c.values, err = scalarList(key, []any{m["value"]})
		} else {
			c.values, err = scalarList(key, m["values"])
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
