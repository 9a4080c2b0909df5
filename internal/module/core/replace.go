package core

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	replace := module.Param{Type: module.TypeString, Default: "",
		Description: "replacement; \\1 or \\g<1> (as in Ansible) or $1 expand to the regexp's groups, \\g<name> or $name to named groups; $$ is a dollar sign. ${ } is a Soul Stack expression, so ${1} is a validation error",
		CheckSource: checkReplaceSource}
	register("core.file.replace", module.Schema{
		Summary: "Replace every match of a regexp in a file",
		Params: editParams(map[string]module.Param{
			"regexp":  regexpParam(true, "regexp (Go RE2, multi-line mode: ^ and $ match at each line) of the text to replace"),
			"replace": replace,
			"after": regexpParam(false, "replace only in the text after the first match of this regexp (Go RE2, . matches newlines); "+
				"with before too, only between it and the first match of before that follows. Nothing matches: the file is left alone"),
			"before": regexpParam(false, "replace only in the text before the last match of this regexp (Go RE2, . matches newlines), "+
				"or with after, before the first match that follows after's. Nothing matches: the file is left alone"),
		}),
		Output: withFields(fileOutput, map[string]module.Field{
			"replacements": outputField(module.TypeInt, "matches of regexp in the file (between after and before) before the edit"),
		}),
	}, fileReplace)
}

// fileReplace replaces every match of regexp with replace, in the part of
// the file after/before select (as Ansible's replace: the section is
// after(?P<subsection>.*?)before, after(.*) or (.*)before, with . matching
// newlines). Idempotence is the caller's: a replacement the regexp
// matches again changes the file on every run.
func fileReplace(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	reStr, repl, after, before := a.str("regexp"), a.str("replace"), a.str("after"), a.str("before")
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	re, err := compileParam("regexp", "(?m)"+reStr)
	if err != nil {
		return domain.Result{}, err
	}
	for name, v := range map[string]string{"after": after, "before": before} {
		if _, err := compileParam(name, v); err != nil {
			return domain.Result{}, err
		}
	}
	var section *regexp.Regexp
	switch {
	case after != "" && before != "":
		section, err = compileParam("after", "(?s)(?:"+after+")(.*?)(?:"+before+")")
	case after != "":
		section, err = compileParam("after", "(?s)(?:"+after+")(.*)")
	case before != "":
		section, err = compileParam("before", "(?s)(.*)(?:"+before+")")
	}
	if err != nil {
		return domain.Result{}, err
	}
	tmpl, err := pyTemplate("replace", repl, re, true)
	if err != nil {
		return domain.Result{}, err
	}
	n, noSection := 0, false
	w.edit = func(old []byte, exists bool) ([]byte, error) {
		if !exists {
			return nil, fmt.Errorf("%s does not exist: nothing to replace in", w.path)
		}
		lo, hi := 0, len(old)
		if section != nil {
			m := section.FindSubmatchIndex(old)
			if m == nil {
				noSection = true
				return old, nil
			}
			lo, hi = m[2], m[3]
		}
		part := old[lo:hi]
		n = len(re.FindAllIndex(part, -1))
		if n == 0 {
			return old, nil
		}
		var out []byte
		out = append(out, old[:lo]...)
		out = append(out, replaceAll(re, part, tmpl)...)
		return append(out, old[hi:]...), nil
	}
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["replacements"] = int64(n)
		if noSection && !res.Changed {
			res.Msg = fmt.Sprintf("%s: after/before matched nothing in the file, so nothing was replaced", w.path)
		}
	}
	return res, err
}

// replaceAll is re.ReplaceAll with a template already translated to Go's
// syntax (Expand, not the literal replacement).
func replaceAll(re *regexp.Regexp, src []byte, tmpl string) []byte {
	var out []byte
	last := 0
	for _, m := range re.FindAllSubmatchIndex(src, -1) {
		out = append(out, src[last:m[0]]...)
		out = re.Expand(out, []byte(tmpl), src, m)
		last = m[1]
	}
	return append(out, src[last:]...)
}

// checkReplaceSource rejects, when a scenario is validated, a ${ } in
// replace: that reads as a regexp group (${1}, ${name}): it is a Soul
// Stack expression (SPEC §7), so ${1} would silently insert the number 1.
// Expressions that read a variable (${ input.x }, ${ item }) are fine.
func checkReplaceSource(s string) error {
	for _, m := range dollarBrace.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > 0 && s[m[0]-1] == '$' {
			continue // $${ is a literal ${
		}
		ref := s[m[2]:m[3]]
		if isDigits(ref) {
			return fmt.Errorf("${%s} is a Soul Stack expression (the number %s), not regexp group %s: write \\%s or \\g<%s> (as in Ansible) or $%s", ref, ref, ref, ref, ref, ref)
		}
		if !isRoot(ref) {
			return fmt.Errorf("${%s} is a Soul Stack expression, not the regexp group named %s: write \\g<%s> (as in Ansible) or $%s", ref, ref, ref, ref)
		}
	}
	return nil
}

// dollarBrace matches ${ident} or ${digits}, spaces allowed inside.
var dollarBrace = regexp.MustCompile(`\$\{\s*([A-Za-z0-9_]+)\s*\}`)

func isDigits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// isRoot reports whether name is a variable of Soul Stack expressions.
func isRoot(name string) bool {
	for _, r := range expr.Roots {
		if r == name {
			return true
		}
	}
	return false
}
