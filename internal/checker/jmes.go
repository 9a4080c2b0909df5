package checker

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	jmespath "github.com/jmespath-community/go-jmespath"
	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// Filter is a compiled JMESPath expression with the Checker's extra
// functions. It is safe for concurrent use.
type Filter struct {
	src string
	jp  jmespath.JMESPath
}

// extraFunctions are the set functions the seeds use that standard JMESPath
// lacks. Each takes two arrays and returns an array without duplicates, in
// the order of first appearance.
var extraFunctions = []functions.FunctionEntry{
	setFunction("difference", func(inB bool) bool { return !inB }, false),
	setFunction("intersection", func(inB bool) bool { return inB }, false),
	setFunction("union", nil, true),
}

// knownFunctions is every function name a filter may call; calls to others
// are refused at load time rather than failing at run time.
var knownFunctions = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range functions.GetDefaultFunctions() {
		m[f.Name] = true
	}
	for _, f := range extraFunctions {
		m[f.Name] = true
	}
	return m
}()

func setFunction(name string, keep func(inB bool) bool, union bool) functions.FunctionEntry {
	return functions.FunctionEntry{
		Name: name,
		Arguments: []functions.ArgSpec{
			{Types: []functions.JpType{functions.JpArray}},
			{Types: []functions.JpType{functions.JpArray}},
		},
		Handler: func(args []any) (any, error) {
			a, okA := args[0].([]any)
			b, okB := args[1].([]any)
			if !okA || !okB {
				return nil, fmt.Errorf("%s: both arguments must be arrays", name)
			}
			out := []any{}
			seen := func(v any) bool {
				for _, x := range out {
					if reflect.DeepEqual(x, v) {
						return true
					}
				}
				return false
			}
			inB := func(v any) bool {
				for _, x := range b {
					if reflect.DeepEqual(x, v) {
						return true
					}
				}
				return false
			}
			for _, v := range a {
				if (union || keep(inB(v))) && !seen(v) {
					out = append(out, v)
				}
			}
			if union {
				for _, v := range b {
					if !seen(v) {
						out = append(out, v)
					}
				}
			}
			return out, nil
		},
	}
}

// CompileFilter parses expr and checks that every function it calls exists.
// Like jmespath.py, it accepts the legacy literal form with elided quotes
// that the seeds use (`DOWN` for `"DOWN"`).
func CompileFilter(expr string) (*Filter, error) {
	src := expr
	expr = quoteLegacyLiterals(expr)
	ast, err := parsing.NewParser().Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid JMESPath %q: %w", expr, err)
	}
	if name := unknownFunction(ast); name != "" {
		return nil, fmt.Errorf("invalid JMESPath %q: unknown function %s()", expr, name)
	}
	jp, err := jmespath.Compile(expr, extraFunctions...)
	if err != nil {
		return nil, fmt.Errorf("invalid JMESPath %q: %w", expr, err)
	}
	return &Filter{src: src, jp: jp}, nil
}

// quoteLegacyLiterals rewrites every `…` literal whose content is not JSON
// into the JSON string of that content, as the JMESPath specification's
// deprecated elided-quotes form (still honoured by jmespath.py) reads it.
// Raw strings '…' and quoted identifiers "…" are skipped over.
func quoteLegacyLiterals(expr string) string {
	var sb strings.Builder
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '\'' && c != '"' && c != '`' {
			sb.WriteByte(c)
			continue
		}
		j := i + 1
		for ; j < len(expr) && expr[j] != c; j++ {
			if expr[j] == '\\' {
				j++
			}
		}
		if j >= len(expr) { // unterminated: let the parser report it
			sb.WriteString(expr[i:])
			break
		}
		tok := expr[i : j+1]
		if c == '`' {
			body := strings.ReplaceAll(tok[1:len(tok)-1], "\\`", "`")
			if !json.Valid([]byte(body)) {
				quoted, _ := marshalJSON(strings.TrimSpace(body))
				tok = "`" + strings.ReplaceAll(string(quoted), "`", "\\`") + "`"
			}
		}
		sb.WriteString(tok)
		i = j
	}
	return sb.String()
}

func unknownFunction(n parsing.ASTNode) string {
	if n.NodeType == parsing.ASTFunctionExpression {
		if name, _ := n.Value.(string); !knownFunctions[name] {
			return name
		}
	}
	for _, c := range n.Children {
		if name := unknownFunction(c); name != "" {
			return name
		}
	}
	return ""
}

// String returns the expression's source.
func (f *Filter) String() string { return f.src }

// Search evaluates the filter over data, which must be JSON-shaped
// (see normalize).
func (f *Filter) Search(data any) (any, error) {
	v, err := f.jp.Search(data)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", f.src, err)
	}
	return v, nil
}

// normalize converts v to the shapes encoding/json produces (map[string]any,
// []any, float64, string, bool, nil), which is what JMESPath and the ops
// compare. Values that cannot be encoded are an error.
func normalize(v any) (any, error) {
	switch v.(type) {
	case nil, string, bool, float64:
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value is not JSON: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("value is not JSON: %w", err)
	}
	return out, nil
}

// toJSON renders v as compact JSON without HTML escaping.
func toJSON(v any) string {
	b, err := marshalJSON(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
