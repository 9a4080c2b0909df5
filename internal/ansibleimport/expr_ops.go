package ansibleimport

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/nodes"
)

func (tr *translator) binary(x *nodes.BinaryExpression) val {
	op := x.Operator.Token.Val
	switch op {
	case "and", "or":
		l, r := tr.cond(x.Left), tr.cond(x.Right)
		cop := "&&"
		if op == "or" {
			cop = "||"
		}
		return val{code: paren(l) + " " + cop + " " + paren(r), kind: KindBool, compound: true}
	case "==", "!=":
		l, r := tr.compare(tr.expr(x.Left), tr.expr(x.Right))
		if l.never || r.never {
			// A value no host a soul runs on reports: constant.
			return val{code: strconv.FormatBool(op == "!="), kind: KindBool}
		}
		return val{code: paren(l) + " " + op + " " + paren(r), kind: KindBool, compound: true}
	case "<", "<=", ">", ">=":
		l, r := tr.expr(x.Left), tr.expr(x.Right)
		if l.fact != nil || r.fact != nil {
			tr.approx("an ordering of a fact whose values differ in Soul Stack (%s %s %s)", l.code, op, r.code)
		}
		return val{code: paren(l) + " " + op + " " + paren(r), kind: KindBool, compound: true}
	case "~":
		l, r := tr.expr(x.Left), tr.expr(x.Right)
		return val{code: tr.str(l) + " + " + tr.str(r), kind: KindString, compound: true}
	case "+", "-", "*", "%":
		l, r := tr.expr(x.Left), tr.expr(x.Right)
		k := l.kind
		if l.kind != r.kind || (k != KindInt && k != KindFloat && !(op == "+" && (k == KindString || k == KindList))) {
			tr.approx("%s %s %s: CEL needs both sides of one type (Python mixes int and float)", l.code, op, r.code)
			k = KindUnknown
		}
		return val{code: paren(l) + " " + op + " " + paren(r), kind: k, compound: true}
	case "/":
		l, r := tr.expr(x.Left), tr.expr(x.Right)
		return val{code: fmt.Sprintf("double(%s) / double(%s)", l.code, r.code), kind: KindFloat, compound: true}
	case "//":
		l, r := tr.expr(x.Left), tr.expr(x.Right)
		if l.kind != KindInt || r.kind != KindInt {
			tr.approx("// of values not known to be integers")
		}
		tr.approx("// rounds toward zero in CEL, toward minus infinity in Python (they differ on negative numbers)")
		return val{code: paren(l) + " / " + paren(r), kind: KindInt, compound: true}
	case "in":
		return tr.in(tr.expr(x.Left), tr.expr(x.Right))
	case "not in":
		v := tr.in(tr.expr(x.Left), tr.expr(x.Right))
		return val{code: "!" + paren(v), kind: KindBool}
	}
	tr.fail("the operator %s has no CEL translation", op)
	return val{}
}

// str is v as a string, for ~.
func (tr *translator) str(v val) string {
	switch v.kind {
	case KindString:
		return paren(v)
	case KindInt, KindFloat, KindBool:
		if v.kind == KindBool {
			tr.approx("~ of a boolean writes true/false where Python writes True/False")
		}
		return "string(" + v.code + ")"
	}
	tr.approx("~ of %s: a value that is not a string is converted with CEL's string()", v.code)
	return "string(" + v.code + ")"
}

// compare rewrites the literal compared with a fact whose values differ.
func (tr *translator) compare(l, r val) (val, val) {
	if l.fact != nil && r.str {
		return l, tr.rewrite(*l.fact, r)
	}
	if r.fact != nil && l.str {
		return tr.rewrite(*r.fact, l), r
	}
	if l.fact != nil || r.fact != nil {
		tr.approx("a fact compared with a value that is not a literal: Soul Stack's values of the fact may be spelt differently")
	}
	return l, r
}

func (tr *translator) rewrite(f Fact, lit val) val {
	s, ok := f.Values(lit.lit)
	if !ok && f.Never != nil && f.Never(lit.lit) {
		return val{code: strconv.Quote(lit.lit), kind: KindString, str: true, lit: lit.lit, never: true}
	}
	if !ok {
		tr.approx("ansible_%s == %q: Soul Stack has no value for %q", f.Ansible, lit.lit, lit.lit)
		return lit
	}
	return val{code: strconv.Quote(s), kind: KindString, str: true, lit: s}
}

// in is Jinja's `a in b`: substring, list member or map key, as contains().
func (tr *translator) in(needle, hay val) val {
	if needle.fact != nil && hay.strs != nil {
		parts := make([]string, 0, len(hay.strs))
		for _, s := range hay.strs {
			if v := tr.rewrite(*needle.fact, val{str: true, lit: s, code: strconv.Quote(s)}); !v.never {
				parts = append(parts, v.code)
			}
		}
		if len(parts) == 0 {
			return val{code: "false", kind: KindBool}
		}
		hay = val{code: "[" + strings.Join(parts, ", ") + "]", kind: KindList}
	} else if needle.fact != nil || hay.fact != nil {
		tr.approx("a fact tested with in against values that are not literals")
	}
	if hay.kind == KindList {
		return val{code: needle.code + " in " + hay.code, kind: KindBool, compound: true}
	}
	return val{code: fmt.Sprintf("contains(%s, %s)", hay.code, needle.code), kind: KindBool}
}

func (tr *translator) test(x *nodes.TestExpression) val {
	name := x.Test.Name
	if name == "in" && len(x.Test.Args) == 1 {
		return tr.in(tr.expr(x.Expression), tr.expr(x.Test.Args[0]))
	}
	if name == "defined" || name == "undefined" {
		return tr.defined(x.Expression, name == "undefined")
	}
	v := tr.expr(x.Expression)
	switch name {
	case "none":
		return val{code: paren(v) + " == null", kind: KindBool, compound: true}
	case "failed", "succeeded", "success", "changed", "change", "skipped", "skip":
		if v.kind != KindRegister {
			tr.approx("%s is %s: the test reads a task result", v.code, name)
		}
		switch name {
		case "failed":
			return val{code: v.code + ".failed", kind: KindBool}
		case "succeeded", "success":
			return val{code: "!" + v.code + ".failed", kind: KindBool}
		case "changed", "change":
			return val{code: v.code + ".changed", kind: KindBool}
		default:
			return val{code: v.code + ".skipped", kind: KindBool}
		}
	case "match", "search", "regex":
		if len(x.Test.Args) != 1 {
			break
		}
		re, ok := x.Test.Args[0].(*nodes.String)
		if !ok {
			tr.approx("a regular expression that is not a literal is read as RE2, not Python's re")
			return val{code: fmt.Sprintf("%s.matches(%s)", paren(v), tr.expr(x.Test.Args[0]).code), kind: KindBool}
		}
		if _, err := regexp.Compile(re.Val); err != nil {
			tr.fail("the regular expression %q is not RE2 (Go): %v", re.Val, err)
			return val{}
		}
		pat := re.Val
		if name == "match" {
			pat = "^(?:" + pat + ")"
		}
		return val{code: fmt.Sprintf("%s.matches(%s)", paren(v), strconv.Quote(pat)), kind: KindBool}
	case "version", "version_compare":
		return tr.version(v, x.Test)
	case "equalto", "eq", "sameas":
		if len(x.Test.Args) == 1 {
			l, r := tr.compare(v, tr.expr(x.Test.Args[0]))
			return val{code: paren(l) + " == " + paren(r), kind: KindBool, compound: true}
		}
	case "even", "odd":
		want := "0"
		if name == "odd" {
			want = "1"
		}
		return val{code: paren(v) + " % 2 == " + want, kind: KindBool, compound: true}
	case "string":
		return val{code: "type(" + v.code + ") == string", kind: KindBool, compound: true}
	case "number":
		return val{code: fmt.Sprintf("type(%s) in [int, double]", v.code), kind: KindBool, compound: true}
	case "mapping":
		return val{code: "type(" + v.code + ") == map", kind: KindBool, compound: true}
	case "boolean":
		return val{code: "type(" + v.code + ") == bool", kind: KindBool, compound: true}
	}
	tr.fail("the Jinja test %q has no CEL translation", name)
	return val{}
}

// defined is `x is defined`: a variable of the scope or a field of one.
func (tr *translator) defined(n nodes.Expression, not bool) val {
	bang := ""
	if not {
		bang = "!"
	}
	switch x := n.(type) {
	case *nodes.Name:
		if tr.sc.Var != nil {
			if path, kind, ok := tr.sc.Var(x.Name.Val); ok {
				if kind == KindRegister {
					tr.approx("%s is defined: a registered task that was skipped is defined in Ansible, absent from register in Soul Stack", x.Name.Val)
					return val{code: bang + "(size(" + path + ") > 0)", kind: KindBool}
				}
				if i := strings.LastIndex(path, "."); i > 0 {
					return val{code: bang + "has(" + path + ")", kind: KindBool}
				}
				return val{code: strconv.FormatBool(!not), kind: KindBool}
			}
		}
		// A name the role never defines comes, in Ansible, from the
		// inventory or extra vars, which are not imported.
		tr.approx("%s is not a variable of the role: in Ansible the inventory or extra vars could define it", x.Name.Val)
		return val{code: strconv.FormatBool(not), kind: KindBool}
	case *nodes.GetAttribute:
		if x.Attribute != "" {
			if _, ok := factPath(x); ok {
				v := tr.expr(x)
				return val{code: bang + "has(" + v.code + ")", kind: KindBool}
			}
			base := tr.expr(x.Node)
			return val{code: bang + "has(" + paren(base) + "." + x.Attribute + ")", kind: KindBool}
		}
	case *nodes.GetItem:
		base := tr.expr(x.Node)
		key := tr.expr(x.Arg)
		if key.str {
			return val{code: bang + "(" + key.code + " in " + paren(base) + ")", kind: KindBool}
		}
	}
	tr.fail("is defined of %s has no CEL translation", n)
	return val{}
}

// versionOps are the operators of Ansible's version test, as CEL compares
// version_compare's result with 0.
var versionOps = map[string]string{"==": "==", "=": "==", "eq": "==", "<": "<", "lt": "<", "<=": "<=", "le": "<=",
	">": ">", "gt": ">", ">=": ">=", "ge": ">=", "!=": "!=", "<>": "!=", "ne": "!="}

// version is `v is version(other, operator)`: LooseVersion, the test's
// default (strict and version_type are other comparisons).
func (tr *translator) version(v val, t *nodes.TestCall) val {
	args := t.Args
	if len(args) == 1 {
		// version('1.2', '<') reaches us as one tuple.
		if tup, ok := args[0].(*nodes.Tuple); ok {
			args = tup.Val
		}
	}
	t = &nodes.TestCall{Name: t.Name, Args: args, Kwargs: t.Kwargs}
	if len(t.Args) == 0 || len(t.Args) > 2 {
		tr.fail("the version test takes a version and an operator (strict and version_type have no CEL translation)")
		return val{}
	}
	op := "eq"
	var opNode nodes.Expression
	if len(t.Args) == 2 {
		opNode = t.Args[1]
	}
	for k, a := range t.Kwargs {
		switch k {
		case "operator":
			opNode = a
		default:
			tr.fail("the version test's %s= (only LooseVersion, the default, has a CEL translation)", k)
			return val{}
		}
	}
	if opNode != nil {
		s, ok := opNode.(*nodes.String)
		if !ok {
			tr.fail("the version test's operator is not a literal")
			return val{}
		}
		op = s.Val
	}
	cop, ok := versionOps[op]
	if !ok {
		tr.fail("the version test has no operator %q", op)
		return val{}
	}
	other := tr.expr(t.Args[0])
	return val{code: fmt.Sprintf("version_compare(%s, %s) %s 0", tr.str(v), tr.str(other), cop), kind: KindBool, compound: true}
}
