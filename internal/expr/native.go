package expr

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// toNative converts a CEL value into plain Go values: map[string]any,
// []any, string, int64, uint64, float64, bool, []byte, time.Time,
// time.Duration or nil.
func toNative(v ref.Val) (any, error) {
	switch x := v.(type) {
	case *types.Err:
		return nil, x
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		return float64(x), nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return []byte(x), nil
	case types.Timestamp:
		return x.Time, nil
	case types.Duration:
		return x.Duration, nil
	case *types.Optional:
		if !x.HasValue() {
			return nil, nil
		}
		return toNative(x.GetValue())
	case *registerVal:
		return x.native(), nil
	case *registerRoot, *soulprintVal:
		return x.ConvertToNative(reflect.TypeOf(map[string]any{}))
	case traits.Mapper:
		out := map[string]any{}
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			kv, err := toNative(k)
			if err != nil {
				return nil, err
			}
			ev, err := toNative(x.Get(k))
			if err != nil {
				return nil, err
			}
			ks, ok := kv.(string)
			if !ok {
				ks = Stringify(kv)
			}
			out[ks] = ev
		}
		return out, nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		out := make([]any, 0, int(n))
		it := x.Iterator()
		for it.HasNext() == types.True {
			ev, err := toNative(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		return out, nil
	case ref.Type:
		return x.TypeName(), nil
	}
	if types.IsUnknown(v) {
		return nil, fmt.Errorf("value is unknown")
	}
	return v.Value(), nil
}

// Stringify renders a value inside a string with text around it: strings
// raw, null as "", integral numbers without a trailing ".0", maps and lists
// as JSON.
func Stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return formatFloat(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
