package expr

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
)

// The string extensions of cel-go (ext.Strings) are charged one unit per
// call by CEL's cost tracker, after the call: "x".replace("", s), a list of
// n references to one string joined, or a format string of n %s built a
// result of n × len(s) bytes before any limit applied (a 100 KB essence
// string replaced into itself allocated 9.5 GB in the Keeper). SPEC §7:
// the cost limit covers every function and every value is bounded. So the
// functions whose output can outgrow their inputs are declared again here
// with the same overload IDs and signatures (cel-go lets a library replace
// an implementation so), each refusing an over-limit result before
// building it; every other string extension is charged its output size
// (extChargedOverloads).

// extGuarded are the ext.Strings overloads whose result can be a multiple
// of their inputs, with the upper bound of their output size.
var extGuarded = map[string]func(args []ref.Val) (int, bool){
	"string_replace_string_string":     replaceSize,
	"string_replace_string_string_int": replaceSize,
	"list_join":                        extJoinSize,
	"list_join_string":                 extJoinSize,
	"string_format":                    formatSize,
}

// extChargedOverloads are the other ext.Strings overloads returning a
// string or a list: each is charged its output size like our functions.
var extChargedOverloads = []string{
	"string_char_at_int", "string_lower_ascii", "string_upper_ascii",
	"string_split_string", "string_split_string_int",
	"string_substring_int", "string_substring_int_int",
	"string_trim", "string_reverse", "strings_quote",
}

// extStringsGuards re-declares the overloads of extGuarded around the
// implementations ext.Strings gives them.
func extStringsGuards() []cel.EnvOption {
	orig, err := extBindings()
	if err != nil {
		// ext.Strings is linked in; its declarations cannot fail.
		panic(fmt.Sprintf("reading the string extension's bindings: %v", err))
	}
	str, listStr, listDyn := cel.StringType, cel.ListType(cel.StringType), cel.ListType(cel.DynType)
	guard := func(id string, fn string) cel.OverloadOpt {
		o, size := orig[id], extGuarded[id]
		return cel.FunctionBinding(func(args ...ref.Val) ref.Val {
			if n, ok := size(args); ok && n > MaxResultBytes {
				return tooLarge(fn, n)
			}
			switch {
			case len(args) == 1 && o.Unary != nil:
				return o.Unary(args[0])
			case len(args) == 2 && o.Binary != nil:
				return o.Binary(args[0], args[1])
			}
			return o.Function(args...)
		})
	}
	return []cel.EnvOption{
		cel.Function("replace",
			cel.MemberOverload("string_replace_string_string", []*cel.Type{str, str, str}, str,
				guard("string_replace_string_string", "replace")),
			cel.MemberOverload("string_replace_string_string_int", []*cel.Type{str, str, str, cel.IntType}, str,
				guard("string_replace_string_string_int", "replace"))),
		cel.Function("join",
			cel.MemberOverload("list_join", []*cel.Type{listStr}, str, guard("list_join", "join")),
			cel.MemberOverload("list_join_string", []*cel.Type{listStr, str}, str, guard("list_join_string", "join"))),
		cel.Function("format",
			cel.MemberOverload("string_format", []*cel.Type{str, listDyn}, str, guard("string_format", "format"))),
	}
}

// extBindings returns the implementations ext.Strings declares for the
// overloads of extGuarded, by overload ID.
func extBindings() (map[string]*functions.Overload, error) {
	env, err := cel.NewEnv(ext.Strings())
	if err != nil {
		return nil, err
	}
	out := map[string]*functions.Overload{}
	for _, fn := range []string{"replace", "join", "format"} {
		d, ok := env.Functions()[fn]
		if !ok {
			return nil, fmt.Errorf("ext.Strings declares no %s", fn)
		}
		bs, err := d.Bindings()
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if _, want := extGuarded[b.Operator]; want {
				out[b.Operator] = b
			}
		}
	}
	for id := range extGuarded {
		if out[id] == nil {
			return nil, fmt.Errorf("ext.Strings has no overload %s", id)
		}
	}
	return out, nil
}

// replaceSize bounds s.replace(old, new[, n]).
func replaceSize(args []ref.Val) (int, bool) {
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	var count int
	if old == "" {
		count = utf8.RuneCountInString(string(s)) + 1
	} else {
		count = strings.Count(string(s), string(old))
	}
	if len(args) == 4 {
		if n, ok := args[3].(types.Int); ok && n >= 0 && int64(n) < int64(count) {
			count = int(n)
		}
	}
	return len(s) + count*max(len(repl)-len(old), 0), true
}

// extJoinSize bounds list.join([sep]).
func extJoinSize(args []ref.Val) (int, bool) {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return 0, false
	}
	sep := 0
	if len(args) == 2 {
		if s, ok := args[1].(types.String); ok {
			sep = len(s)
		}
	}
	n, _ := l.Size().(types.Int)
	if int64(n)*int64(sep) > MaxResultBytes {
		return int(min(int64(n)*int64(sep), MaxResultBytes*2)), true
	}
	return valSize(l, MaxResultBytes*2) + int(n)*sep, true
}

// formatSize bounds fmt.format(args): an argument fills at most one verb,
// so only the first as many arguments as fmt has % count; each prints in
// at most three times its size, or maxNumberText bytes for a number (the
// largest double at the extension's precision limit of 100 digits).
func formatSize(args []ref.Val) (int, bool) {
	f, ok1 := args[0].(types.String)
	l, ok2 := args[1].(traits.Lister)
	if !ok1 || !ok2 {
		return 0, false
	}
	const maxNumberText = 512
	verbs := strings.Count(string(f), "%")
	n := len(f)
	it := l.Iterator()
	for i := 0; i < verbs && it.HasNext() == types.True && n <= MaxResultBytes; i++ {
		n += max(3*valSize(it.Next(), MaxResultBytes), maxNumberText)
	}
	return n, true
}
