package expr

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// lib declares the functions of SPEC §7 beyond CEL's standard library and
// cel-go's strings extension (which already gives s.split(sep),
// list.join(sep), s.trim(), s.startsWith(p), s.matches(re), s.contains(x)).
type lib struct{ e *Env }

func library(e *Env) cel.EnvOption { return cel.Lib(lib{e}) }

func (lib) ProgramOptions() []cel.ProgramOption { return []cel.ProgramOption{costOptions()} }

func (l lib) CompileOptions() []cel.EnvOption {
	dyn, str, boolean := cel.DynType, cel.StringType, cel.BoolType
	listDyn := cel.ListType(dyn)
	mapDyn := cel.MapType(str, dyn)
	strFn := func(f func(string) string) cel.OverloadOpt {
		return cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.(types.String)
			if !ok {
				return types.NoSuchOverloadErr()
			}
			return types.String(f(string(s)))
		})
	}
	return append(append(append(mapFunctions(), extStringsGuards()...), ansibleFunctions()...),
		cel.Function("contains",
			cel.Overload("contains_dyn_dyn", []*cel.Type{dyn, dyn}, boolean, cel.BinaryBinding(containsImpl)),
			cel.MemberOverload("list_contains_dyn", []*cel.Type{listDyn, dyn}, boolean, cel.BinaryBinding(containsImpl)),
			cel.MemberOverload("map_contains_dyn", []*cel.Type{cel.MapType(dyn, dyn), dyn}, boolean, cel.BinaryBinding(containsImpl)),
		),
		cel.Function("startsWith",
			cel.Overload("starts_with_string_string", []*cel.Type{str, str}, boolean, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
				return types.Bool(strings.HasPrefix(string(a.(types.String)), string(b.(types.String))))
			}))),
		cel.Function("endsWith",
			cel.Overload("ends_with_string_string", []*cel.Type{str, str}, boolean, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
				return types.Bool(strings.HasSuffix(string(a.(types.String)), string(b.(types.String))))
			}))),
		cel.Function("split",
			cel.Overload("split_string_string_global", []*cel.Type{str, str}, cel.ListType(str), cel.BinaryBinding(func(a, b ref.Val) ref.Val {
				return nativeToValue(strings.Split(string(a.(types.String)), string(b.(types.String))))
			}))),
		cel.Function("join",
			cel.Overload("join_list_string_global", []*cel.Type{listDyn, str}, str, cel.BinaryBinding(joinImpl))),
		cel.Function("lower",
			cel.Overload("lower_string", []*cel.Type{str}, str, strFn(strings.ToLower)),
			cel.MemberOverload("string_lower", []*cel.Type{str}, str, strFn(strings.ToLower))),
		cel.Function("upper",
			cel.Overload("upper_string", []*cel.Type{str}, str, strFn(strings.ToUpper)),
			cel.MemberOverload("string_upper", []*cel.Type{str}, str, strFn(strings.ToUpper))),
		cel.Function("trim",
			cel.Overload("trim_string_global", []*cel.Type{str}, str, strFn(strings.TrimSpace))),
		cel.Function("default",
			cel.Overload("default_dyn_dyn", []*cel.Type{dyn, dyn}, dyn, cel.OverloadIsNonStrict(), cel.BinaryBinding(defaultImpl))),
		cel.Function("to_json",
			cel.Overload("to_json_dyn", []*cel.Type{dyn}, str, cel.UnaryBinding(toJSONImpl))),
		cel.Function("from_json",
			cel.Overload("from_json_string", []*cel.Type{str}, dyn, cel.UnaryBinding(fromJSONImpl))),
		cel.Function("sha256",
			cel.Overload("sha256_string", []*cel.Type{str}, str, strFn(func(s string) string {
				sum := sha256.Sum256([]byte(s))
				return hex.EncodeToString(sum[:])
			}))),
		cel.Function("b64enc",
			cel.Overload("b64enc_string", []*cel.Type{str}, str, cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.NoSuchOverloadErr()
				}
				if n := base64.StdEncoding.EncodedLen(len(s)); n > MaxResultBytes {
					return tooLarge("b64enc", n)
				}
				return types.String(base64.StdEncoding.EncodeToString([]byte(s)))
			}))),
		cel.Function("b64dec",
			cel.Overload("b64dec_string", []*cel.Type{str}, str, cel.UnaryBinding(b64decImpl))),
		cel.Function("shquote",
			cel.Overload("shquote_dyn", []*cel.Type{dyn}, str, cel.UnaryBinding(shquoteImpl))),
		cel.Function("where",
			cel.MemberOverload("list_where_string", []*cel.Type{listDyn, str}, listDyn, cel.BinaryBinding(l.e.whereOnList)),
			cel.MemberOverload("map_where_string", []*cel.Type{mapDyn, str}, listDyn, cel.BinaryBinding(l.e.whereOnMap))),
	)
}

// containsImpl: substring for strings, membership for lists, key presence
// for maps; null contains nothing.
func containsImpl(hay, needle ref.Val) ref.Val {
	switch h := hay.(type) {
	case types.String:
		n, ok := needle.(types.String)
		if !ok {
			return types.NewErr("contains(string, …) needs a string needle, got %s", needle.Type().TypeName())
		}
		return types.Bool(strings.Contains(string(h), string(n)))
	case types.Null:
		return types.False
	case traits.Lister:
		it := h.Iterator()
		for it.HasNext() == types.True {
			if it.Next().Equal(needle) == types.True {
				return types.True
			}
		}
		return types.False
	case traits.Mapper:
		return h.Contains(needle)
	}
	return types.NewErr("contains() needs a string, list or map, got %s", hay.Type().TypeName())
}

// defaultImpl is non-strict: x when it evaluated to a non-null value, else
// y (a missing key, an error or null all fall back).
func defaultImpl(x, y ref.Val) ref.Val {
	if types.IsUnknownOrError(x) || x == types.NullValue {
		return y
	}
	if _, isNull := x.(types.Null); isNull {
		return y
	}
	return x
}

func joinImpl(list, sep ref.Val) ref.Val {
	l, ok := list.(traits.Lister)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	n, _ := l.Size().(types.Int)
	if size := valSize(list, MaxResultBytes*2) + int(n)*len(sep.(types.String)); size > MaxResultBytes {
		return tooLarge("join", size)
	}
	var parts []string
	it := l.Iterator()
	for it.HasNext() == types.True {
		v, err := toNative(it.Next())
		if err != nil {
			return types.WrapErr(err)
		}
		parts = append(parts, Stringify(v))
	}
	return types.String(strings.Join(parts, string(sep.(types.String))))
}

func toJSONImpl(v ref.Val) ref.Val {
	// JSON escapes can grow a string up to 6 times (\u00xx).
	if size := valSize(v, MaxResultBytes*2); size > MaxResultBytes {
		return tooLarge("to_json", size)
	}
	n, err := toNative(v)
	if err != nil {
		return types.WrapErr(err)
	}
	b, err := json.Marshal(n)
	if err != nil {
		return types.NewErr("to_json: %v", err)
	}
	if len(b) > MaxResultBytes {
		return tooLarge("to_json", len(b))
	}
	return types.String(b)
}

func fromJSONImpl(v ref.Val) ref.Val {
	dec := json.NewDecoder(bytes.NewReader([]byte(v.(types.String))))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		// Never the decoder's words: they quote the value's bytes ("invalid
		// character 'Z'"), and the value may be a secret (N4).
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return types.NewErr("from_json: the value is not valid JSON: it ends too early")
		}
		return types.NewErr("from_json: the value is not valid JSON")
	}
	if dec.More() {
		return types.NewErr("from_json: trailing data after the JSON value")
	}
	return nativeToValue(normalizeJSON(out))
}

// normalizeJSON turns json.Number into int64 when integral, else float64.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeJSON(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeJSON(e)
		}
	}
	return v
}

func b64decImpl(v ref.Val) ref.Val {
	s := string(v.(types.String))
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b2, err2 := base64.RawStdEncoding.DecodeString(s); err2 == nil {
			return types.String(b2)
		}
		// Never the position of the bad byte: the value may be a secret (N4).
		return types.NewErr("b64dec: the value is not valid base64 (standard alphabet, padded or not)")
	}
	return types.String(b)
}

// ShellQuote quotes s as one word for /bin/sh: in single quotes, with each
// single quote written as '\”.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shquoteImpl is shquote(x): x rendered like an interpolation (strings as
// they are, numbers in decimal, lists and maps as JSON), then quoted for
// /bin/sh (SPEC §7 decision).
func shquoteImpl(v ref.Val) ref.Val {
	if size := valSize(v, MaxResultBytes*2); size > MaxResultBytes {
		return tooLarge("shquote", size)
	}
	n, err := toNative(v)
	if err != nil {
		return types.WrapErr(err)
	}
	out := ShellQuote(Stringify(n))
	if len(out) > MaxResultBytes {
		return tooLarge("shquote", len(out))
	}
	return types.String(out)
}
