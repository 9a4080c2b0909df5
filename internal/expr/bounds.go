package expr

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// MaxResultBytes bounds the value of one expression and the output of each
// of our functions (SPEC §7 decision: 1 MiB by default).
const MaxResultBytes = 1 << 20

// ErrTooLarge is wrapped by evaluation errors of expressions whose value
// (or an intermediate string or list) exceeded MaxResultBytes.
var ErrTooLarge = errors.New("value larger than the 1 MiB limit of an expression")

// tooLarge is the CEL error of a function whose output would exceed the
// bound; it is raised before the output is allocated.
func tooLarge(fn string, n int) ref.Val {
	return types.WrapErr(fmt.Errorf("%s: %w (it would be %d bytes)", fn, ErrTooLarge, n))
}

// SizeOf estimates the bytes of a plain Go value (strings by length,
// scalars 8, JSON punctuation included), stopping once it passes limit.
func SizeOf(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch x := v.(type) {
		case nil, bool:
			n += 5
		case string:
			n += len(x) + 2
		case []byte:
			n += len(x) + 2
		case map[string]any:
			n += 2
			for k, e := range x {
				n += len(k) + 4
				walk(e)
				if n > limit {
					return
				}
			}
		case []any:
			n += 2
			for _, e := range x {
				n++
				walk(e)
				if n > limit {
					return
				}
			}
		default:
			rv := reflect.ValueOf(v)
			switch rv.Kind() {
			case reflect.Slice, reflect.Array:
				n += 2
				for i := 0; i < rv.Len() && n <= limit; i++ {
					n++
					walk(rv.Index(i).Interface())
				}
			case reflect.Map:
				n += 2
				it := rv.MapRange()
				for it.Next() && n <= limit {
					n += 4
					walk(it.Key().Interface())
					walk(it.Value().Interface())
				}
			default:
				n += 8
			}
		}
	}
	walk(v)
	return n
}

// valSize estimates the size of a CEL value the way SizeOf does, without
// converting it first (lists may repeat one large string many times).
func valSize(v ref.Val, limit int) int {
	switch x := v.(type) {
	case types.String:
		return len(x) + 2
	case types.Bytes:
		return len(x) + 2
	case traits.Lister:
		n := 2
		it := x.Iterator()
		for it.HasNext() == types.True && n <= limit {
			n += 1 + valSize(it.Next(), limit-n)
		}
		return n
	case traits.Mapper:
		n := 2
		it := x.Iterator()
		for it.HasNext() == types.True && n <= limit {
			k := it.Next()
			n += 2 + valSize(k, limit-n) + valSize(x.Get(k), limit-n)
		}
		return n
	}
	return 8
}

// ourOverloads are the overload IDs of the functions of lib whose output
// grows with their input; each is charged its output size (SPEC §7: the
// cost limit covers every function, ours included).
var ourOverloads = []string{
	"contains_dyn_dyn", "list_contains_dyn", "map_contains_dyn",
	"starts_with_string_string", "ends_with_string_string",
	"split_string_string_global", "join_list_string_global",
	"lower_string", "string_lower", "upper_string", "string_upper", "trim_string_global",
	"default_dyn_dyn", "to_json_dyn", "from_json_string", "sha256_string",
	"b64enc_string", "b64dec_string", "shquote_dyn",
	"list_where_string", "map_where_string",
	"merge_dyn_dyn", "keys_dyn",
}

// costOptions charges each of our functions 1 + one unit per byte (or
// element) of its output, on top of the inputs CEL already charged.
func costOptions() cel.ProgramOption {
	var opts []interpreter.CostTrackerOption
	charged := append(append(append([]string(nil), ourOverloads...), extChargedOverloads...), ansibleOverloads...)
	for id := range extGuarded {
		charged = append(charged, id)
	}
	for _, id := range charged {
		opts = append(opts, interpreter.OverloadCostTracker(id, func(_ []ref.Val, result ref.Val) *uint64 {
			c := uint64(1 + valSize(result, MaxResultBytes*4))
			return &c
		}))
	}
	return cel.CostTrackerOptions(opts...)
}
