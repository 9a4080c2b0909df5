// Package ansibleimport turns Ansible content into Soul Stack's: Jinja
// expressions into CEL (this file), Ansible facts into soulprint fields
// (facts.go). Every translation says whether it is exact, approximated
// (and what is lost) or manual (a person must decide), so an import never
// drops meaning silently (SPEC §17, "Ansible import").
package ansibleimport

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Kind is what the importer knows of a value's type.
type Kind int

// The kinds of values. KindUnknown is a value whose type only the run
// knows.
const (
	KindUnknown Kind = iota
	KindBool
	KindString
	KindInt
	KindFloat
	KindList
	KindMap
	KindNull
	// KindRegister is a registered task's result (register.<name>).
	KindRegister
)

// Scope resolves the names an expression reads besides facts.
type Scope struct {
	// RawFacts keeps a fact written out as soulprint spells it (for vars
	// file names, which the import writes under soulprint's values).
	RawFacts bool
	// Var resolves a variable: its CEL path (vars.port, input.port,
	// register.result, item) and its kind; ok is false for a name the
	// scope does not know.
	Var func(name string) (path string, kind Kind, ok bool)
	// Stat tells the registers of stat tasks (by CEL path): Ansible's
	// result.stat.exists is Soul Stack's register.r.exists.
	Stat func(path string) bool
}

// Translation is one expression in CEL, with how faithful it is.
type Translation struct {
	// CEL is the translated text: a bare CEL expression for conditions,
	// a string with ${ } for values. Empty when Manual is set.
	CEL string
	// Lost lists what an approximation does not carry over; empty when
	// the translation is exact.
	Lost []string
	// Manual, when set, says why the expression could not be translated.
	Manual string
	// Omit, for a value that is one {{ x | default(omit) }}, is the CEL
	// condition under which Ansible leaves the parameter out; CEL is then
	// the value given otherwise.
	Omit string
}

// Exact reports whether the translation means exactly what the Ansible
// expression meant.
func (t Translation) Exact() bool { return t.Manual == "" && len(t.Lost) == 0 }

// TranslateCondition translates a bare Jinja expression (when:,
// failed_when:, changed_when:, until:) to a boolean CEL predicate.
func TranslateCondition(src string, sc Scope) Translation {
	tr := &translator{sc: sc}
	out, err := parse("{{ " + src + " }}")
	if err != nil {
		return Translation{Manual: fmt.Sprintf("not a Jinja expression: %v", err)}
	}
	if len(out.Nodes) != 1 {
		return Translation{Manual: "not a single Jinja expression"}
	}
	o, ok := out.Nodes[0].(*nodes.Output)
	if !ok {
		return Translation{Manual: "not a single Jinja expression"}
	}
	v := tr.output(o)
	if tr.manual == "" && v.kind != KindBool {
		v.code = tr.truthy(v)
	}
	return tr.result(v.code)
}

// TranslateValue translates a task parameter or loop: value: text with
// {{ }} becomes text with ${ } (a value that is exactly one {{ }} keeps
// its type); text without Jinja is returned as it is.
func TranslateValue(src string, sc Scope) Translation {
	if !strings.Contains(src, "{{") && !strings.Contains(src, "{%") {
		if strings.Contains(src, "${") {
			return Translation{Manual: "the text holds ${, which Soul Stack reads as an expression"}
		}
		return Translation{CEL: src}
	}
	tpl, err := parse(src)
	if err != nil {
		return Translation{Manual: fmt.Sprintf("not a Jinja template: %v", err)}
	}
	tr := &translator{sc: sc}
	var b strings.Builder
	omit := ""
	for _, n := range tpl.Nodes {
		switch x := n.(type) {
		case *nodes.Data:
			text := x.Data.Val
			if strings.Contains(text, "${") {
				tr.fail("the text holds ${, which Soul Stack reads as an expression")
			}
			b.WriteString(text)
		case *nodes.Output:
			v := tr.output(x)
			if v.fact != nil && v.fact.Values != nil && !sc.RawFacts {
				if sp := spelling(*v.fact, v.code); sp != "" {
					v.code = sp
				} else {
					tr.approx("%s is written out as soulprint spells it, which differs from Ansible's spelling", v.code)
				}
			}
			if v.omitWhen != "" {
				if len(tpl.Nodes) == 1 {
					omit = v.omitWhen
				} else {
					tr.approx("default(omit) inside a longer value: the parameter is given (empty) where Ansible left it out")
				}
			}
			b.WriteString("${ " + v.code + " }")
		case *nodes.Comment:
		default:
			tr.fail("Jinja statements ({%% %%}) in a value: render it with a template instead")
		}
	}
	t := tr.result(b.String())
	if t.Manual == "" {
		t.Omit = omit
	}
	return t
}

// parse parses src with Ansible's Jinja settings for templated values: a
// trailing newline is kept (Templar's preserve_trailing_newlines).
func parse(src string) (*nodes.Template, error) {
	cfg := config.New()
	cfg.KeepTrailingNewline = true
	p := parser.NewParser("expression", tokens.Lex(versionKwargs(pyEscapes(src)), cfg), cfg, nil, builtins.ControlStructures)
	return p.Parse()
}

// versionOperatorKwarg is `is version(v, operator=op)`, the one keyword
// argument of a test that roles write: gonja's parser reads no keyword
// arguments in a test call, so it is passed by position (the operator is
// the version test's second parameter).
var versionOperatorKwarg = regexp.MustCompile(`(\bis\s+(?:not\s+)?version(?:_compare)?\s*\(\s*[^(),=]+?)\s*,\s*operator\s*=\s*('[^']*'|"[^"]*")\s*\)`)

func versionKwargs(src string) string {
	return versionOperatorKwarg.ReplaceAllString(src, "$1, $2)")
}

// pyEscapes doubles a backslash inside a string literal of an expression
// when the escape is not one Python knows: Python keeps '\d' as a
// backslash and a d (a regexp's \d in regex_replace), gonja's lexer
// refuses it.
func pyEscapes(src string) string {
	var b strings.Builder
	inExpr, quote := false, byte(0)
	for i := 0; i < len(src); i++ {
		ch := src[i]
		switch {
		case !inExpr:
			if ch == '{' && i+1 < len(src) && (src[i+1] == '{' || src[i+1] == '%') {
				inExpr = true
				b.WriteByte(ch)
				i++
				ch = src[i]
			}
		case quote != 0:
			if ch == '\\' && i+1 < len(src) {
				if !strings.ContainsRune("\\'\"abfnrtvxuUN\n", rune(src[i+1])) {
					b.WriteString("\\\\")
					continue
				}
				b.WriteByte(ch)
				i++
				ch = src[i]
			} else if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case (ch == '}' || ch == '%') && i+1 < len(src) && src[i+1] == '}':
			inExpr = false
			b.WriteByte(ch)
			i++
			ch = src[i]
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// val is one translated sub-expression.
type val struct {
	code string
	kind Kind
	// compound marks code that needs parentheses inside an operator.
	compound bool
	// fact is set when the value reads a fact with value rewriting.
	fact *Fact
	// str is set when the value is a string literal (lit holds it).
	str bool
	lit string
	// strs is set when the value is a list of string literals.
	strs []string
	// never marks a literal that the fact never equals on a host a soul
	// runs on (a BSD family, or a value Ansible itself never reports).
	never bool
	// elem is the kind of a list's elements, when known.
	elem Kind
	// omitWhen is set by default(omit): the condition under which the
	// parameter is left out.
	omitWhen string
}

type translator struct {
	sc     Scope
	lost   []string
	manual string
}

func (tr *translator) approx(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, l := range tr.lost {
		if l == msg {
			return
		}
	}
	tr.lost = append(tr.lost, msg)
}

func (tr *translator) fail(format string, args ...any) {
	if tr.manual == "" {
		tr.manual = fmt.Sprintf(format, args...)
	}
}

func (tr *translator) result(code string) Translation {
	if tr.manual != "" {
		return Translation{Manual: tr.manual}
	}
	sort.Strings(tr.lost)
	return Translation{CEL: code, Lost: tr.lost}
}

func (tr *translator) output(o *nodes.Output) val {
	v := tr.expr(o.Expression)
	if o.Condition == nil {
		return v
	}
	c := tr.cond(o.Condition)
	if o.Alternative == nil {
		tr.approx("an inline if without else gives an empty string when false")
		return val{code: fmt.Sprintf("%s ? %s : \"\"", paren(c), paren(v)), compound: true}
	}
	alt := tr.expr(o.Alternative)
	k := v.kind
	if alt.kind != k {
		k = KindUnknown
	}
	return val{code: fmt.Sprintf("%s ? %s : %s", paren(c), paren(v), paren(alt)), kind: k, compound: true}
}

// cond translates n where Jinja tests truthiness.
func (tr *translator) cond(n nodes.Expression) val {
	v := tr.expr(n)
	if v.kind == KindBool {
		return v
	}
	return val{code: tr.truthy(v), kind: KindBool, compound: true}
}

// truthy is Jinja's truth test of v in CEL.
func (tr *translator) truthy(v val) string {
	switch v.kind {
	case KindString, KindList, KindMap:
		return fmt.Sprintf("size(%s) > 0", v.code)
	case KindInt:
		return paren(v) + " != 0"
	case KindFloat:
		return paren(v) + " != 0.0"
	case KindNull:
		return "false"
	}
	tr.approx("%s is tested as a boolean; Jinja also takes a non-empty string or list, or a non-zero number, as true", v.code)
	return paren(v) + " == true"
}

func paren(v val) string {
	if v.compound {
		return "(" + v.code + ")"
	}
	return v.code
}

func (tr *translator) expr(n nodes.Node) val {
	switch x := n.(type) {
	case *nodes.String:
		return val{code: strconv.Quote(x.Val), kind: KindString, str: true, lit: x.Val}
	case *nodes.Integer:
		return val{code: strconv.Itoa(x.Val), kind: KindInt}
	case *nodes.Float:
		return val{code: strconv.FormatFloat(x.Val, 'g', -1, 64), kind: KindFloat}
	case *nodes.Bool:
		return val{code: strconv.FormatBool(x.Val), kind: KindBool}
	case *nodes.None:
		return val{code: "null", kind: KindNull}
	case *nodes.List:
		return tr.list(x.Val)
	case *nodes.Tuple:
		return tr.list(x.Val)
	case *nodes.Dict:
		parts := make([]string, len(x.Pairs))
		for i, p := range x.Pairs {
			parts[i] = tr.expr(p.Key).code + ": " + tr.expr(p.Value).code
		}
		return val{code: "{" + strings.Join(parts, ", ") + "}", kind: KindMap}
	case *nodes.Name:
		return tr.name(x.Name.Val)
	case *nodes.GetAttribute:
		return tr.attr(x)
	case *nodes.GetItem:
		return tr.item(x)
	case *nodes.Negation:
		v := tr.cond(x.Term)
		switch v.code {
		case "true":
			return val{code: "false", kind: KindBool}
		case "false":
			return val{code: "true", kind: KindBool}
		}
		return val{code: "!" + paren(v), kind: KindBool}
	case *nodes.UnaryExpression:
		v := tr.expr(x.Term)
		if x.Negative {
			return val{code: "-" + paren(v), kind: v.kind}
		}
		return v
	case *nodes.BinaryExpression:
		return tr.binary(x)
	case *nodes.TestExpression:
		return tr.test(x)
	case *nodes.FilteredExpression:
		v := tr.expr(x.Expression)
		for i, f := range x.Filters {
			if i == 0 && (f.Name == "default" || f.Name == "d") && len(f.Kwargs) == 0 {
				v = tr.defaultOf(x.Expression, v, f)
				continue
			}
			if v.omitWhen != "" {
				tr.fail("a filter after default(omit) has no CEL translation")
			}
			v = tr.filter(v, f)
		}
		return v
	case *nodes.Call:
		return tr.call(x)
	}
	tr.fail("%s has no CEL translation", n)
	return val{}
}

func (tr *translator) list(items []nodes.Expression) val {
	parts := make([]string, len(items))
	strs := make([]string, 0, len(items))
	allStr := true
	for i, it := range items {
		v := tr.expr(it)
		parts[i] = v.code
		if v.str {
			strs = append(strs, v.lit)
		} else {
			allStr = false
		}
	}
	v := val{code: "[" + strings.Join(parts, ", ") + "]", kind: KindList}
	if allStr {
		v.strs = strs
	}
	return v
}

// name resolves a bare name: a fact, a loop variable or a scope variable.
func (tr *translator) name(n string) val {
	if f, ok := strings.CutPrefix(n, "ansible_"); ok && f != "facts" && f != "loop" {
		return tr.fact(f)
	}
	switch n {
	case "item":
		return val{code: "item"}
	case "inventory_hostname", "inventory_hostname_short":
		tr.approx("%s is the soul's SID (its host name by default), not an inventory name", n)
		return val{code: "soulprint.self.sid", kind: KindString}
	case "true", "True":
		return val{code: "true", kind: KindBool}
	case "false", "False":
		return val{code: "false", kind: KindBool}
	case "none", "None":
		return val{code: "null", kind: KindNull}
	case "hostvars", "groups", "play_hosts", "ansible_play_hosts", "ansible_play_batch", "group_names":
		tr.fail("%s reads the inventory: target with on: covens and soulprint.where() instead", n)
		return val{}
	case "omit":
		tr.fail("omit has no CEL value: leave the parameter out, or give it with when:")
		return val{}
	}
	if tr.sc.Var != nil {
		if path, kind, ok := tr.sc.Var(n); ok {
			return val{code: path, kind: kind}
		}
	}
	tr.fail("%s is not a variable the role defines (defaults, vars, register, loop) nor a known fact", n)
	return val{}
}

func (tr *translator) fact(name string) val {
	f, ok := lookupFact(name)
	if !ok {
		tr.fail("the fact ansible_%s has no soulprint equivalent (see the fact table)", name)
		return val{}
	}
	if f.CEL == "" {
		tr.fail("the fact ansible_%s has no soulprint equivalent: %s", name, f.Lost)
		return val{}
	}
	if f.Lost != "" {
		tr.approx("ansible_%s: %s", name, f.Lost)
	}
	v := val{code: f.CEL, kind: KindUnknown}
	if f.Values != nil {
		v.fact = &f
		v.kind = KindString
	}
	return v
}

// attr is x.y: a fact of ansible_facts, a nested fact, a register field or
// a map field.
func (tr *translator) attr(x *nodes.GetAttribute) val {
	if x.Attribute == "" {
		base := tr.expr(x.Node)
		return val{code: fmt.Sprintf("%s[%d]", paren(base), x.Index), kind: base.elem}
	}
	if f, ok := factPath(x); ok {
		return tr.fact(f)
	}
	base := tr.expr(x.Node)
	if base.kind == KindRegister {
		return tr.registerField(base, x.Attribute)
	}
	return val{code: paren(base) + "." + x.Attribute}
}

// factPath recognises ansible_facts.a(.b) and ansible_a.b of a known fact.
func factPath(n nodes.Node) (string, bool) {
	var parts []string
	for {
		switch x := n.(type) {
		case *nodes.GetAttribute:
			if x.Attribute == "" {
				return "", false
			}
			parts = append([]string{x.Attribute}, parts...)
			n = x.Node
			continue
		case *nodes.GetItem:
			s, ok := x.Arg.(*nodes.String)
			if !ok {
				return "", false
			}
			parts = append([]string{s.Val}, parts...)
			n = x.Node
			continue
		case *nodes.Name:
			if x.Name.Val == "ansible_facts" {
				if len(parts) == 0 {
					return "", false
				}
			} else if f, ok := strings.CutPrefix(x.Name.Val, "ansible_"); ok && f != "loop" {
				parts = append([]string{f}, parts...)
			} else {
				return "", false
			}
		default:
			return "", false
		}
		break
	}
	name := strings.Join(parts, ".")
	if _, ok := lookupFact(name); ok {
		return name, true
	}
	if _, ok := lookupFact(parts[0]); ok && len(parts) == 1 {
		return parts[0], true
	}
	if len(parts) > 0 && strings.HasPrefix(name, parts[0]) {
		// ansible_facts.unknown or a field of a fact without one: the
		// caller reports it through tr.fact.
		return name, true
	}
	return "", false
}

// registerField reads field of a registered result.
func (tr *translator) registerField(reg val, field string) val {
	switch field {
	case "rc":
		return val{code: reg.code + ".rc", kind: KindInt}
	case "stdout", "stderr", "msg":
		return val{code: reg.code + "." + field, kind: KindString}
	case "changed", "failed", "skipped":
		return val{code: reg.code + "." + field, kind: KindBool}
	case "stdout_lines", "stderr_lines":
		tr.approx("%s is split on \\n (Python's splitlines also splits on \\r and keeps no trailing empty line)", field)
		return val{code: fmt.Sprintf("split(%s.%s, \"\\n\")", reg.code, strings.TrimSuffix(field, "_lines")), kind: KindList}
	case "results":
		return val{code: reg.code + ".results", kind: KindList}
	case "stat":
		if tr.sc.Stat != nil && tr.sc.Stat(reg.code) {
			return val{code: reg.code, kind: KindMap}
		}
	}
	tr.approx("%s.%s: the Soul Stack module's result may name this field differently", reg.code, field)
	return val{code: reg.code + "." + field}
}

func (tr *translator) item(x *nodes.GetItem) val {
	if f, ok := factPath(x); ok {
		return tr.fact(f)
	}
	base := tr.expr(x.Node)
	idx := tr.expr(x.Arg)
	if base.kind == KindRegister && idx.str {
		return tr.registerField(base, idx.lit)
	}
	if idx.kind == KindInt && strings.HasPrefix(idx.code, "-") {
		tr.fail("a negative index (%s) has no CEL translation", idx.code)
	}
	return val{code: paren(base) + "[" + idx.code + "]", kind: base.elem}
}
