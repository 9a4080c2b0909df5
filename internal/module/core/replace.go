package core

import (
	"context"
	"fmt"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.file.replace", module.Schema{
		Summary: "Replace every match of a regexp in a file",
		Params: editParams(map[string]module.Param{
			"regexp":  str(true, "regexp (Go RE2, multi-line mode: ^ and $ match at each line) of the text to replace"),
			"replace": {Type: module.TypeString, Default: "", Description: "replacement; $1 or ${name} expand to the regexp's groups"},
		}),
		Output: withFields(fileOutput, map[string]module.Field{
			"replacements": outputField(module.TypeInt, "matches of regexp in the file before the edit"),
		}),
	}, fileReplace)
}

// fileReplace replaces every match of regexp with replace. Idempotence is
// the caller's: a replacement the regexp matches again changes the file on
// every run.
func fileReplace(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	expr, repl := a.str("regexp"), a.str("replace")
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	re, err := compileParam("regexp", "(?m)"+expr)
	if err != nil {
		return domain.Result{}, err
	}
	n := 0
	w.edit = func(old []byte, exists bool) ([]byte, error) {
		if !exists {
			return nil, fmt.Errorf("%s does not exist: nothing to replace in", w.path)
		}
		n = len(re.FindAllIndex(old, -1))
		if n == 0 {
			return old, nil
		}
		return re.ReplaceAll(old, []byte(repl)), nil
	}
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["replacements"] = int64(n)
	}
	return res, err
}
