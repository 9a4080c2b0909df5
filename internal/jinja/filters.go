package jinja

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"github.com/soulstack/soulstack/internal/textutil"
	"hash"
	"path"
	"regexp"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// ansibleFilters are Ansible's filters (ansible.builtin) and the Jinja
// builtins whose gonja version differs from Jinja2's or grows its output
// without a bound.
func ansibleFilters(limit int, newline string) map[string]exec.FilterFunction {
	builtin := func(name string) exec.FilterFunction {
		fn, _ := builtins.Filters.Get(name)
		return fn
	}
	join, indent, center, replace := builtin("join"), builtin("indent"), builtin("center"), builtin("replace")
	wordwrap := filterWordwrap(newline)
	return map[string]exec.FilterFunction{
		"default": filterDefault,
		"d":       filterDefault,
		"bool":    filterBool,
		"reverse": filterReverse,
		"join": func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			d := p.GetKeywordArgument("d", "")
			if len(p.Args) > 0 {
				d = p.Args[0]
			}
			if in.IsIterable() {
				if v := bounded("join", in.Len()*len(d.String()), limit); v != nil {
					return v
				}
			}
			return join(e, in, p)
		},
		"indent": func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			w := p.GetKeywordArgument("width", 4)
			if len(p.Args) > 0 {
				w = p.Args[0]
			}
			n := len(w.String())
			if w.IsInteger() {
				n = w.Integer()
			}
			if v := bounded("indent", len(in.String())+n*(strings.Count(in.String(), "\n")+1), limit); v != nil {
				return v
			}
			return indent(e, in, p)
		},
		"wordwrap": func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			wrap := p.GetKeywordArgument("wrapstring", "\n")
			if len(p.Args) > 2 {
				wrap = p.Args[2]
			}
			if v := bounded("wordwrap", len(in.String())*(1+len(wrap.String())), limit); v != nil {
				return v
			}
			return wordwrap(e, in, p)
		},
		"center": func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			w := p.GetKeywordArgument("width", 80)
			if len(p.Args) > 0 {
				w = p.Args[0]
			}
			if v := bounded("center", w.Integer()+len(in.String()), limit); v != nil {
				return v
			}
			return center(e, in, p)
		},
		"replace": func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			if len(p.Args) >= 2 {
				s, old, repl := in.String(), p.Args[0].String(), p.Args[1].String()
				n := strings.Count(s, old)
				if v := bounded("replace", len(s)+n*len(repl), limit); v != nil {
					return v
				}
			}
			return replace(e, in, p)
		},
		"to_json": func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			return encoded("to_json")(pyJSON(goValue(in), -1, limit))
		},
		"to_nice_json": func(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			return encoded("to_nice_json")(pyJSON(goValue(in), intArg(p, 0, "indent", 4), limit))
		},
		"to_yaml": func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			return encoded("to_yaml")(pyYAML(goValue(in), true, 2, limit))
		},
		"to_nice_yaml": func(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			return encoded("to_nice_yaml")(pyYAML(goValue(in), false, intArg(p, 0, "indent", 4), limit))
		},
		"regex_replace": filterRegexReplace,
		"regex_search":  filterRegexSearch,
		"b64encode": func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			return exec.AsValue(base64.StdEncoding.EncodeToString([]byte(in.String())))
		},
		"b64decode": func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			b, err := base64.StdEncoding.DecodeString(in.String())
			if err != nil {
				return errValue("b64decode", "%v", err)
			}
			return exec.AsValue(string(b))
		},
		"items2dict": filterItems2Dict,
		"ternary":    filterTernary,
		"comment":    filterComment,
		"difference": filterDifference,
		"combine":    filterCombine,
		"quote": func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			return exec.AsValue(shellQuote(pyString(in)))
		},
		"basename": func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			s := in.String()
			return exec.AsValue(s[strings.LastIndexByte(s, '/')+1:])
		},
		"dirname": func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			s := in.String()
			i := strings.LastIndexByte(s, '/')
			if i < 0 {
				return exec.AsValue("")
			}
			head := s[:i+1]
			if strings.Trim(head, "/") != "" {
				head = strings.TrimRight(head, "/")
			}
			return exec.AsValue(head)
		},
		"mandatory": func(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			if in.IsError() {
				if len(p.Args) > 0 {
					return errValue("mandatory", "%s", p.Args[0].String())
				}
				return errValue("mandatory", "Mandatory variable not defined: %s", in.Error())
			}
			return in
		},
		"hash": filterHash,
		"path_join": func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			var parts []string
			for i := 0; i < in.Len(); i++ {
				parts = append(parts, in.Index(i).String())
			}
			out := ""
			for _, p := range parts {
				if strings.HasPrefix(p, "/") {
					out = p
				} else {
					out = path.Join(out, p)
					if out == "." {
						out = p
					}
				}
			}
			return exec.AsValue(out)
		},
	}
}

func encoded(fn string) func(string, error) *exec.Value {
	return func(s string, err error) *exec.Value {
		if err != nil {
			return errValue(fn, "%v", err)
		}
		return exec.AsValue(s)
	}
}

func intArg(p *exec.VarArgs, pos int, kw string, def int) int {
	if len(p.Args) > pos && p.Args[pos].IsInteger() {
		return p.Args[pos].Integer()
	}
	if v, ok := p.KwArgs[kw]; ok && v.IsInteger() {
		return v.Integer()
	}
	return def
}

func boolArg(p *exec.VarArgs, pos int, kw string) bool {
	if pos >= 0 && len(p.Args) > pos {
		return p.Args[pos].IsTrue()
	}
	if v, ok := p.KwArgs[kw]; ok {
		return v.IsTrue()
	}
	return false
}

// filterDefault is Jinja's default(value=”, boolean=false): the value
// when the input is undefined (or false with boolean), never for None.
func filterDefault(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	def := p.GetKeywordArgument("default_value", "")
	if len(p.Args) > 0 {
		def = p.Args[0]
	}
	if in.IsError() || (boolArg(p, 1, "boolean") && !in.IsTrue()) {
		return def
	}
	return in
}

// filterBool is Ansible's bool: None and booleans pass, "yes", "on", "1",
// "true" (any case) and 1 are true, anything else false.
func filterBool(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	switch {
	case in.IsNil() || in.IsBool():
		return in
	case in.IsString():
		switch strings.ToLower(in.String()) {
		case "yes", "on", "1", "true":
			return exec.AsValue(true)
		}
	case in.IsInteger():
		return exec.AsValue(in.Integer() == 1)
	case in.IsFloat():
		return exec.AsValue(in.Float() == 1)
	}
	return exec.AsValue(false)
}

// pyRegexp compiles a Python regular expression (textutil.PyRegexp),
// its error as this filter's.
func pyRegexp(fn, pattern string, ignorecase, multiline bool) (*regexp.Regexp, *exec.Value) {
	re, err := textutil.PyRegexp(pattern, ignorecase, multiline)
	if err != nil {
		return nil, errValue(fn, "%v", err)
	}
	return re, nil
}

func filterRegexReplace(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	pattern, repl := "", ""
	if len(p.Args) > 0 {
		pattern = p.Args[0].String()
	}
	if len(p.Args) > 1 {
		repl = p.Args[1].String()
	}
	re, bad := pyRegexp("regex_replace", pattern, boolArg(p, 2, "ignorecase"), boolArg(p, 3, "multiline"))
	if bad != nil {
		return bad
	}
	return exec.AsValue(re.ReplaceAllString(in.String(), textutil.PyReplacement(repl)))
}

// filterRegexSearch is Ansible's regex_search: the match (None when there
// is none), or the list of the groups named by its '\N' or '\g<name>'
// arguments.
func filterRegexSearch(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	if len(p.Args) == 0 {
		return errValue("regex_search", "needs a pattern")
	}
	re, bad := pyRegexp("regex_search", p.Args[0].String(), boolArg(p, -1, "ignorecase"), boolArg(p, -1, "multiline"))
	if bad != nil {
		return bad
	}
	m := re.FindStringSubmatchIndex(in.String())
	if m == nil {
		return exec.AsValue(nil)
	}
	s := in.String()
	if len(p.Args) == 1 {
		return exec.AsValue(s[m[0]:m[1]])
	}
	var groups []any
	for _, a := range p.Args[1:] {
		sub := textutil.PyGroup.FindStringSubmatch(a.String())
		if sub == nil || sub[0] != a.String() || sub[0] == "$" {
			return errValue("regex_search", `unknown argument %s (want '\\N' or '\\g<name>')`, a.String())
		}
		i := 0
		if sub[1] != "" {
			i = re.SubexpIndex(sub[1])
		} else {
			for _, c := range sub[2] {
				i = i*10 + int(c-'0')
			}
		}
		if i < 0 || 2*i+1 >= len(m) {
			return errValue("regex_search", "no group %s in the pattern", a.String())
		}
		if m[2*i] < 0 {
			groups = append(groups, nil)
		} else {
			groups = append(groups, s[m[2*i]:m[2*i+1]])
		}
	}
	return exec.AsValue(groups)
}

func filterItems2Dict(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	kn := p.GetKeywordArgument("key_name", "key").String()
	vn := p.GetKeywordArgument("value_name", "value").String()
	list, ok := goValue(in).([]any)
	if !ok {
		return errValue("items2dict", "requires a list, got %s", pyString(in))
	}
	out := map[string]any{}
	for _, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return errValue("items2dict", "requires a list of dictionaries")
		}
		k, okk := m[kn]
		v, okv := m[vn]
		if !okk || !okv {
			return errValue("items2dict", "an item lacks %q or %q", kn, vn)
		}
		out[exec.AsValue(k).String()] = v
	}
	return exec.AsValue(out)
}

// filterTernary is Ansible's ternary(true_val, false_val, none_val=None).
func filterTernary(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	if len(p.Args) < 2 {
		return errValue("ternary", "needs a true value and a false value")
	}
	if in.IsNil() && len(p.Args) > 2 && !p.Args[2].IsNil() {
		return p.Args[2]
	}
	if in.IsTrue() {
		return p.Args[0]
	}
	return p.Args[1]
}

// filterCombine is Ansible's combine(*dicts, recursive=False,
// list_merge='replace'); only list_merge=replace is supported.
func filterCombine(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	recursive := boolArg(p, -1, "recursive")
	if lm, ok := p.KwArgs["list_merge"]; ok && lm.String() != "replace" {
		return errValue("combine", "list_merge=%s is not supported (only replace)", lm.String())
	}
	terms := []*exec.Value{in}
	terms = append(terms, p.Args...)
	out := map[string]any{}
	for _, t := range terms {
		var dicts []any
		if t.IsList() {
			dicts, _ = goValue(t).([]any)
		} else {
			dicts = []any{goValue(t)}
		}
		for _, d := range dicts {
			m, ok := d.(map[string]any)
			if !ok {
				return errValue("combine", "expects dictionaries, got %s", pyString(exec.AsValue(d)))
			}
			out = merge(out, m, recursive)
		}
	}
	return exec.AsValue(out)
}

func merge(a, b map[string]any, recursive bool) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if recursive {
			am, aok := out[k].(map[string]any)
			bm, bok := v.(map[string]any)
			if aok && bok {
				out[k] = merge(am, bm, true)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// shellQuote is Python's shlex.quote.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// filterHash is Ansible's hash(hashtype='sha1') for md5, sha1, sha224,
// sha256, sha384 and sha512.
func filterHash(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	kind := "sha1"
	if len(p.Args) > 0 {
		kind = p.Args[0].String()
	}
	var h hash.Hash
	switch kind {
	case "md5":
		h = md5.New()
	case "sha1":
		h = sha1.New()
	case "sha224":
		h = sha256.New224()
	case "sha256":
		h = sha256.New()
	case "sha384":
		h = sha512.New384()
	case "sha512":
		h = sha512.New()
	default:
		return errValue("hash", "unsupported hash type %s (md5, sha1, sha224, sha256, sha384, sha512)", kind)
	}
	h.Write([]byte(in.String()))
	return exec.AsValue(hex.EncodeToString(h.Sum(nil)))
}

// ansibleTests are Jinja's tests as Jinja2 defines them where gonja
// differs, and Ansible's regex tests.
func ansibleTests() map[string]exec.TestFunction {
	return map[string]exec.TestFunction{
		"defined": func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
			return !in.IsError(), nil
		},
		"undefined": func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
			return in.IsError(), nil
		},
		"none": func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
			return !in.IsError() && in.IsNil(), nil
		},
		"match":  regexTest("match"),
		"search": regexTest("search"),
		"regex":  regexTest("search"),
		// Ansible's version test (alias version_compare) with its loose
		// comparison, the one roles use on `x is version('1.8', '>=')`.
		"version":         versionTest,
		"version_compare": versionTest,
	}
}

// testArgs undoes how gonja parses a test's call: it reads
// `x is version('1.8', '>=')` as one argument, the tuple ('1.8', '>='),
// where Jinja passes two. Tests whose first argument is never a list
// (version, match, search) take the tuple's items as their arguments.
// Keyword arguments in a test call are a syntax error in gonja.
func testArgs(p *exec.VarArgs) *exec.VarArgs {
	if len(p.Args) != 1 || !p.Args[0].IsList() {
		return p
	}
	var args []*exec.Value
	p.Args[0].Iterate(func(_, _ int, key, _ *exec.Value) bool {
		args = append(args, key)
		return true
	}, func() {})
	return &exec.VarArgs{Args: args, KwArgs: p.KwArgs}
}

// versionOperators are the operator spellings Ansible's version test takes.
var versionOperators = map[string]func(int) bool{
	"==": func(c int) bool { return c == 0 }, "=": func(c int) bool { return c == 0 }, "eq": func(c int) bool { return c == 0 },
	"<": func(c int) bool { return c < 0 }, "lt": func(c int) bool { return c < 0 },
	"<=": func(c int) bool { return c <= 0 }, "le": func(c int) bool { return c <= 0 },
	">": func(c int) bool { return c > 0 }, "gt": func(c int) bool { return c > 0 },
	">=": func(c int) bool { return c >= 0 }, "ge": func(c int) bool { return c >= 0 },
	"!=": func(c int) bool { return c != 0 }, "<>": func(c int) bool { return c != 0 }, "ne": func(c int) bool { return c != 0 },
}

// versionTest is version(other, operator='eq', strict=False) with
// LooseVersion semantics; strict and version_type are refused rather than
// silently compared another way.
func versionTest(_ *exec.Context, in *exec.Value, p *exec.VarArgs) (bool, error) {
	p = testArgs(p)
	if in.IsError() {
		return false, errValue("version", "the version to compare is undefined")
	}
	var other *exec.Value
	if len(p.Args) > 0 {
		other = p.Args[0]
	} else if v, ok := p.KwArgs["version"]; ok {
		other = v
	}
	if other == nil {
		return false, errValue("version", "needs a version to compare with")
	}
	op := "eq"
	if len(p.Args) > 1 {
		op = p.Args[1].String()
	} else if v, ok := p.KwArgs["operator"]; ok {
		op = v.String()
	}
	for _, kw := range []string{"strict", "version_type"} {
		if v, ok := p.KwArgs[kw]; ok && v.IsTrue() && v.String() != "loose" {
			return false, errValue("version", "%s=%s is not supported (only the loose comparison)", kw, v.String())
		}
	}
	if len(p.Args) > 2 && p.Args[2].IsTrue() {
		return false, errValue("version", "strict comparison is not supported (only the loose comparison)")
	}
	check, ok := versionOperators[op]
	if !ok {
		return false, errValue("version", "invalid operator type (%s)", op)
	}
	c, err := textutil.CompareLooseVersions(in.String(), other.String())
	if err != nil {
		return false, errValue("version", "%v", err)
	}
	return check(c), nil
}

func regexTest(kind string) func(*exec.Context, *exec.Value, *exec.VarArgs) (bool, error) {
	return func(_ *exec.Context, in *exec.Value, p *exec.VarArgs) (bool, error) {
		p = testArgs(p)
		if len(p.Args) == 0 {
			return false, errValue(kind, "needs a pattern")
		}
		pattern := p.Args[0].String()
		if kind == "match" {
			pattern = `\A(?:` + pattern + `)`
		}
		re, bad := pyRegexp(kind, pattern, boolArg(p, -1, "ignorecase"), boolArg(p, -1, "multiline"))
		if bad != nil {
			return false, bad
		}
		return re.MatchString(in.String()), nil
	}
}

// filterComment is Ansible's comment filter in its default (plain) style:
// the text's lines behind "# ", between a "#" line above and below.
func filterComment(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	if len(p.Args) > 0 && p.Args[0].String() != "plain" {
		return errValue("comment", "only the plain style is supported, not %s", p.Args[0].String())
	}
	if len(p.KwArgs) > 0 {
		return errValue("comment", "keyword arguments are not supported")
	}
	lines := strings.Split(in.String(), "\n")
	var b strings.Builder
	b.WriteString("#\n")
	for _, l := range lines {
		b.WriteString(strings.TrimRight("# "+l, " "))
		b.WriteString("\n")
	}
	b.WriteString("#")
	return exec.AsValue(b.String())
}

// filterDifference is Ansible's difference: the unique items of the list
// that are not in the other, in the list's order.
func filterDifference(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
	if len(p.Args) != 1 || !in.IsList() || !p.Args[0].IsList() {
		return errValue("difference", "needs two lists")
	}
	other := map[string]bool{}
	for _, v := range p.Args[0].ToGoSimpleType(false).([]any) {
		other[fmt.Sprint(v)] = true
	}
	seen := map[string]bool{}
	out := []any{}
	for _, v := range in.ToGoSimpleType(false).([]any) {
		k := fmt.Sprint(v)
		if other[k] || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, v)
	}
	return exec.AsValue(out)
}
