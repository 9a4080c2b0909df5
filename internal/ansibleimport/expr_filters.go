package ansibleimport

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/nodes"

	"github.com/soulstack/soulstack/internal/textutil"
)

// boolStrings are the strings Ansible's bool filter takes as true (after
// lower-casing), as our string() writes true, 1 and 1.0.
const boolStrings = `["1", "on", "t", "true", "y", "yes"]`

// defaultOf is `x | default(d)` (or default(d, true), default(omit)):
// exact where the importer can write Ansible's notion of "x is
// undefined" in CEL (a role variable, a loop item, a field of either),
// which keeps a null x as Ansible does; approximated (CEL's default(),
// which also replaces null) elsewhere.
func (tr *translator) defaultOf(n nodes.Expression, v val, f *nodes.FilterCall) val {
	guard, ok := tr.definedGuard(n)
	orEmpty := false
	if len(f.Args) == 2 {
		if b, isBool := f.Args[1].(*nodes.Bool); isBool {
			orEmpty = b.Val
		} else {
			tr.fail("default's second argument is not a literal boolean")
			return val{}
		}
	} else if len(f.Args) > 2 {
		tr.fail("default with %d arguments", len(f.Args))
		return val{}
	}
	missing := "!" + parenCode(guard)
	if guard == "true" {
		missing = "false"
	}
	if orEmpty {
		t := tr.truthy(v)
		if missing == "false" {
			missing = "!(" + t + ")"
		} else {
			missing = fmt.Sprintf("%s || !(%s)", missing, t)
		}
	}
	if len(f.Args) > 0 {
		if nm, isName := f.Args[0].(*nodes.Name); isName && nm.Name.Val == "omit" {
			if !ok {
				tr.approx("default(omit) of %s: the parameter is given where Ansible may leave it out", v.code)
				return v
			}
			v.omitWhen = missing
			return v
		}
	}
	d := val{code: `""`, kind: KindString}
	if len(f.Args) > 0 {
		d = tr.expr(f.Args[0])
	}
	k := v.kind
	if d.kind != k {
		k = KindUnknown
	}
	if !ok {
		if orEmpty {
			tr.approx("default(x, true): an empty string or list keeps the default in Ansible only")
		} else {
			tr.approx("default(): a value that is null falls back to the default in Soul Stack, and stays null in Ansible")
		}
		return val{code: fmt.Sprintf("default(%s, %s)", v.code, d.code), kind: k}
	}
	if missing == "false" {
		return v
	}
	return val{code: fmt.Sprintf("(%s) ? %s : %s", missing, paren(d), paren(v)), kind: k, compound: true}
}

// definedGuard is the CEL condition under which Ansible finds n defined:
// a role variable or loop item, or a field of one (each step a map that
// has the key). ok is false where the importer cannot say (facts,
// registers, names from the inventory).
func (tr *translator) definedGuard(n nodes.Expression) (string, bool) {
	switch x := n.(type) {
	case *nodes.Name:
		if x.Name.Val == "item" {
			return "true", true
		}
		if strings.HasPrefix(x.Name.Val, "ansible_") || tr.sc.Var == nil {
			return "", false
		}
		path, kind, ok := tr.sc.Var(x.Name.Val)
		if !ok || kind == KindRegister {
			return "", false
		}
		if strings.Contains(path, ".") {
			return "has(" + path + ")", true
		}
		return "true", true
	case *nodes.GetAttribute, *nodes.GetItem:
		if _, isFact := factPath(x); isFact {
			return "", false
		}
		var base nodes.Expression
		var key string
		if ga, isAttr := x.(*nodes.GetAttribute); isAttr {
			if ga.Attribute == "" {
				return "", false
			}
			base, key = ga.Node, ga.Attribute
		} else {
			gi := x.(*nodes.GetItem)
			s, isStr := gi.Arg.(*nodes.String)
			if !isStr {
				return "", false
			}
			base, key = gi.Node, s.Val
		}
		g, ok := tr.definedGuard(base)
		if !ok {
			return "", false
		}
		sub := &translator{sc: tr.sc}
		b := sub.expr(base)
		if sub.manual != "" || b.kind == KindRegister {
			return "", false
		}
		here := fmt.Sprintf("type(%s) == map && %s in %s", b.code, strconv.Quote(key), paren(b))
		if g == "true" {
			return here, true
		}
		return g + " && " + here, true
	}
	return "", false
}

// parenCode wraps a condition in parentheses unless it is one call.
func parenCode(c string) string {
	if strings.HasPrefix(c, "has(") && strings.Count(c, "(") == 1 {
		return c
	}
	return "(" + c + ")"
}

func (tr *translator) args(f *nodes.FilterCall) []val {
	out := make([]val, len(f.Args))
	for i, a := range f.Args {
		out[i] = tr.expr(a)
	}
	return out
}

// filter applies the Jinja filter f to v.
func (tr *translator) filter(v val, f *nodes.FilterCall) val {
	if len(f.Kwargs) > 0 {
		tr.fail("the filter %s with keyword arguments has no CEL translation", f.Name)
		return val{}
	}
	a := tr.args(f)
	switch f.Name {
	case "bool":
		if v.kind == KindBool {
			return v
		}
		if v.kind == KindNull {
			return val{code: "false", kind: KindBool}
		}
		return val{code: fmt.Sprintf("lower(string(%s)) in %s", v.code, boolStrings), kind: KindBool, compound: true}
	case "int":
		if v.kind == KindInt {
			return v
		}
		def := "0"
		if len(a) > 0 {
			if a[0].kind != KindInt {
				tr.fail("int's default is not an integer")
				return val{}
			}
			def = a[0].code
		}
		if len(a) > 1 {
			tr.fail("int with a base has no CEL translation")
			return val{}
		}
		return val{code: fmt.Sprintf("int_or(%s, %s)", v.code, def), kind: KindInt}
	case "float":
		if len(a) > 0 || (v.kind != KindInt && v.kind != KindFloat) {
			tr.approx("float: a value that is not a number fails in Soul Stack instead of giving 0.0")
		}
		return val{code: "double(" + v.code + ")", kind: KindFloat}
	case "string":
		if v.kind == KindString {
			return v
		}
		return val{code: tr.str(v), kind: KindString}
	case "length", "count":
		return val{code: "size(" + v.code + ")", kind: KindInt}
	case "lower", "upper":
		return val{code: f.Name + "(" + v.code + ")", kind: KindString}
	case "trim":
		return val{code: "trim(" + v.code + ")", kind: KindString}
	case "join":
		sep := `""`
		if len(a) > 0 {
			sep = a[0].code
		}
		return val{code: fmt.Sprintf("join(%s, %s)", v.code, sep), kind: KindString}
	case "first":
		return val{code: paren(v) + "[0]"}
	case "last":
		return val{code: fmt.Sprintf("%s[size(%s) - 1]", paren(v), v.code)}
	case "list":
		if v.kind != KindList {
			tr.approx("list of %s: a value that is not a list is kept as it is", v.code)
		}
		return v
	case "replace":
		if len(a) == 2 && v.kind == KindString {
			return val{code: fmt.Sprintf("%s.replace(%s, %s)", paren(v), a[0].code, a[1].code), kind: KindString}
		}
	case "regex_replace":
		if len(a) != 2 || !a[0].str || !(a[1].str || a[1].kind == KindString) {
			break
		}
		if _, err := textutil.PyRegexp(a[0].lit, false, false); err != nil {
			tr.fail("the regular expression %q is not RE2 (Go): %v", a[0].lit, err)
			return val{}
		}
		return val{code: fmt.Sprintf("regex_replace(%s, %s, %s)", tr.str(v), a[0].code, a[1].code), kind: KindString}
	case "to_json":
		tr.approx("to_json: Soul Stack writes compact JSON (no spaces after , and :)")
		return val{code: "to_json(" + v.code + ")", kind: KindString}
	case "from_json":
		return val{code: "from_json(" + v.code + ")"}
	case "b64encode":
		return val{code: "b64enc(" + v.code + ")", kind: KindString}
	case "b64decode":
		return val{code: "b64dec(" + v.code + ")", kind: KindString}
	case "quote":
		return val{code: "shquote(" + v.code + ")", kind: KindString}
	case "ternary":
		if len(a) >= 2 {
			c := v
			if c.kind != KindBool {
				c = val{code: tr.truthy(v), kind: KindBool, compound: true}
			}
			if len(a) == 3 {
				tr.approx("ternary's third value (for none) is not translated")
			}
			k := a[0].kind
			if a[1].kind != k {
				k = KindUnknown
			}
			return val{code: fmt.Sprintf("%s ? %s : %s", paren(c), paren(a[0]), paren(a[1])), kind: k, compound: true}
		}
	case "combine":
		if len(a) == 1 {
			tr.approx("combine: Soul Stack's merge() merges maps deeply, Ansible's combine only with recursive=true")
			return val{code: fmt.Sprintf("merge(%s, %s)", v.code, a[0].code), kind: KindMap}
		}
	case "dict2items":
		return val{code: fmt.Sprintf("keys(%s).map(k, {\"key\": k, \"value\": %s[k]})", paren(v), paren(v)), kind: KindList}
	case "mandatory":
		return v
	case "dirname":
		// Python's os.path.dirname: everything before the last slash
		// ("/" for a file at the root, "" without a slash).
		return val{code: fmt.Sprintf(`%s.lastIndexOf("/") > 0 ? %s.substring(0, %s.lastIndexOf("/")) : (%s.startsWith("/") ? "/" : "")`, paren(v), paren(v), paren(v), paren(v)), kind: KindString, compound: true}
	case "basename":
		return val{code: fmt.Sprintf(`%s.substring(%s.lastIndexOf("/") + 1)`, paren(v), paren(v)), kind: KindString}
	case "abs":
		return val{code: fmt.Sprintf("%s < 0 ? -%s : %s", paren(v), paren(v), paren(v)), kind: v.kind, compound: true}
	}
	tr.fail("the filter %s has no CEL translation", f.Name)
	return val{}
}

// call translates a method call on a value: Python string and dict
// methods people use in conditions.
func (tr *translator) call(x *nodes.Call) val {
	ga, ok := x.Func.(*nodes.GetAttribute)
	if !ok || ga.Attribute == "" || len(x.Kwargs) > 0 {
		tr.fail("%s has no CEL translation", x)
		return val{}
	}
	recv := tr.expr(ga.Node)
	args := make([]val, len(x.Args))
	for i, a := range x.Args {
		args[i] = tr.expr(a)
	}
	switch ga.Attribute {
	case "split":
		if len(args) == 1 && args[0].str && args[0].lit != "" {
			return val{code: fmt.Sprintf("split(%s, %s)", recv.code, args[0].code), kind: KindList, elem: KindString}
		}
		if len(args) == 0 {
			return val{code: fmt.Sprintf("split(%s)", recv.code), kind: KindList, elem: KindString}
		}
	case "startswith", "endswith":
		if len(args) == 1 && args[0].kind == KindString {
			m := "startsWith"
			if ga.Attribute == "endswith" {
				m = "endsWith"
			}
			return val{code: fmt.Sprintf("%s.%s(%s)", paren(recv), m, args[0].code), kind: KindBool}
		}
	case "lower", "upper":
		if len(args) == 0 {
			return val{code: ga.Attribute + "(" + recv.code + ")", kind: KindString}
		}
	case "strip":
		if len(args) == 0 {
			return val{code: "trim(" + recv.code + ")", kind: KindString}
		}
	case "keys":
		if len(args) == 0 {
			return val{code: "keys(" + recv.code + ")", kind: KindList}
		}
	case "get":
		if len(args) == 2 && args[0].str {
			return val{code: fmt.Sprintf("(%s in %s) ? %s[%s] : %s", args[0].code, paren(recv), paren(recv), args[0].code, paren(args[1])), compound: true}
		}
		if len(args) == 1 && args[0].str {
			return val{code: fmt.Sprintf("(%s in %s) ? %s[%s] : null", args[0].code, paren(recv), paren(recv), args[0].code), compound: true}
		}
	case "replace":
		if len(args) == 2 {
			return val{code: fmt.Sprintf("%s.replace(%s, %s)", paren(recv), args[0].code, args[1].code), kind: KindString}
		}
	}
	tr.fail("the method %s(%d arguments) has no CEL translation", ga.Attribute, len(args))
	return val{code: strconv.Quote("")}
}
