package expr

import (
	"regexp"
	"slices"
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// secretsVar is the hidden variable secret("name") reads (SPEC §10.5):
// the macro rewrites the call into secretsVar["name"], so the Keeper
// passes the run's secret values in the Activation (Secrets) and nothing
// else needs a per-evaluation function binding.
const secretsVar = "__secrets"

// secretMacro expands secret("name") — the name must be a string literal,
// so the Keeper knows at validation which secrets an expression reads.
var secretMacro = cel.GlobalMacro("secret", 1, func(eh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *cel.Error) {
	if args[0].Kind() != ast.LiteralKind {
		return nil, eh.NewError(args[0].ID(), `secret() takes the secret's name as a string literal: secret("db_password")`)
	}
	if _, ok := args[0].AsLiteral().(types.String); !ok {
		return nil, eh.NewError(args[0].ID(), `secret() takes the secret's name as a string literal: secret("db_password")`)
	}
	return eh.NewCall(operators.Index, eh.NewIdent(secretsVar), args[0]), nil
})

// secretOptions declares secret() for scenario expressions (evaluated on
// the Keeper); destiny expressions, evaluated on souls, have none.
func secretOptions(kind Kind) []cel.EnvOption {
	if kind != KindScenario {
		return nil
	}
	return []cel.EnvOption{cel.Macros(secretMacro), cel.Variable(secretsVar, cel.MapType(cel.StringType, cel.StringType))}
}

var secretCallRE = regexp.MustCompile(`\bsecret\(\s*(?:\\?"([^"\\]*)\\?"|'([^'\\]*)')\s*\)`)

// SecretNames returns the names src reads with secret("…"), sorted. It
// also finds them in YAML source, where the quotes may be escaped
// (secret(\"name\") inside a double-quoted string).
func SecretNames(src string) []string {
	var out []string
	for _, m := range secretCallRE.FindAllStringSubmatch(src, -1) {
		n := m[1] + m[2]
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
