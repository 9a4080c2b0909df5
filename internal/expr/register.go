package expr

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// registerRoot is the value of the register root: register.<name> yields a
// registerVal, register.self the current task's own result.
type registerRoot struct {
	regs *Registers
	self map[string]any
	sid  string
}

var (
	_ traits.Mapper = (*registerRoot)(nil)
	_ traits.Mapper = (*registerVal)(nil)
)

func (r *registerRoot) lookup(key ref.Val) (ref.Val, bool) {
	name, ok := key.(types.String)
	if !ok {
		return types.NewErr("register keys are task register names (strings), got %s", key.Type().TypeName()), true
	}
	if name == "self" {
		if r.self == nil {
			return types.NewErr("register.self is only set in retry.until, failed_when and changed_when"), true
		}
		return nativeToValue(r.self), true
	}
	if !r.regs.has(string(name)) {
		return nil, false
	}
	return &registerVal{name: string(name), regs: r.regs, sid: r.sid}, true
}

func (r *registerRoot) Find(key ref.Val) (ref.Val, bool) { return r.lookup(key) }

func (r *registerRoot) Get(key ref.Val) ref.Val {
	v, ok := r.lookup(key)
	if !ok {
		return types.NewErr("register.%v is not defined: no earlier task has register: %v", key, key)
	}
	return v
}

func (r *registerRoot) Contains(key ref.Val) ref.Val {
	v, ok := r.lookup(key)
	return types.Bool(ok && !types.IsError(v))
}

func (r *registerRoot) Size() ref.Val { return types.Int(len(r.regs.Names())) }

func (r *registerRoot) Iterator() traits.Iterator {
	return newStringIterator(r.regs.Names())
}

func (r *registerRoot) ConvertToNative(typeDesc reflect.Type) (any, error) {
	out := map[string]any{}
	for _, n := range r.regs.Names() {
		h, _ := r.regs.Hosts(n)
		out[n] = hostsAny(h)
	}
	return convertMap(out, typeDesc)
}

func (r *registerRoot) ConvertToType(t ref.Type) ref.Val { return convertToType(r, t) }
func (r *registerRoot) Equal(o ref.Val) ref.Val          { return types.Bool(o == r) }
func (r *registerRoot) Type() ref.Type                   { return types.MapType }
func (r *registerRoot) Value() any                       { return r }

// registerVal is register.<name>: size() counts the hosts with a result,
// field access reads the current host's result (or the single host's), and
// hosts is the SID → result map. It reads the live Registers without
// copying them, so evaluating a predicate per host stays O(1) per host.
type registerVal struct {
	name string
	regs *Registers
	sid  string
}

// resolve picks the result field access reads, or explains why none can be
// picked.
func (r *registerVal) resolve() (map[string]any, error) {
	r.regs.mu.RLock()
	defer r.regs.mu.RUnlock()
	hosts := r.regs.m[r.name]
	if r.sid != "" {
		if m, ok := hosts[r.sid]; ok {
			return m, nil
		}
	}
	switch len(hosts) {
	case 1:
		for _, m := range hosts {
			return m, nil
		}
	case 0:
		if why := r.regs.why[r.name]; why != "" {
			return nil, fmt.Errorf("register.%s has no result: %s", r.name, why)
		}
		return nil, fmt.Errorf("register.%s has no result on any host", r.name)
	}
	sids := make([]string, 0, len(hosts))
	for s := range hosts {
		sids = append(sids, s)
	}
	sort.Strings(sids)
	where := "outside a per-host context"
	if r.sid != "" {
		where = fmt.Sprintf("and host %s has none", r.sid)
	}
	list := strings.Join(sids, ", ")
	if len(sids) > 5 {
		list = strings.Join(sids[:5], ", ") + ", …"
	}
	return nil, fmt.Errorf("register.%s is ambiguous: %d hosts have a result (%s) %s; pick one with register.%s.hosts[\"<sid>\"]",
		r.name, len(sids), list, where, r.name)
}

func (r *registerVal) Find(key ref.Val) (ref.Val, bool) {
	field, ok := key.(types.String)
	if !ok {
		return types.NewErr("register.%s fields are strings, got %s", r.name, key.Type().TypeName()), true
	}
	if field == "hosts" {
		return nativeToValue(r.hostsAny()), true
	}
	m, err := r.resolve()
	if err != nil {
		return types.WrapErr(err), true
	}
	v, ok := m[string(field)]
	if !ok {
		return nil, false
	}
	return nativeToValue(v), true
}

func (r *registerVal) Get(key ref.Val) ref.Val {
	v, ok := r.Find(key)
	if !ok {
		return types.NewErr("no such key: %v (register.%s results have no field %v)", key, r.name, key)
	}
	return v
}

func (r *registerVal) Contains(key ref.Val) ref.Val {
	v, ok := r.Find(key)
	if types.IsError(v) {
		return v
	}
	return types.Bool(ok)
}

func (r *registerVal) Size() ref.Val {
	r.regs.mu.RLock()
	defer r.regs.mu.RUnlock()
	return types.Int(len(r.regs.m[r.name]))
}

func (r *registerVal) Iterator() traits.Iterator {
	hosts := r.hostsAny()
	sids := make([]string, 0, len(hosts))
	for s := range hosts {
		sids = append(sids, s)
	}
	sort.Strings(sids)
	return newStringIterator(sids)
}

// hostsAny copies the SID → result map.
func (r *registerVal) hostsAny() map[string]any {
	h, _ := r.regs.Hosts(r.name)
	return hostsAny(h)
}

// native is the Go value of register.<name> used whole (e.g. to_json):
// the resolved result when there is one, else {"hosts": …}.
func (r *registerVal) native() map[string]any {
	if m, err := r.resolve(); err == nil {
		return m
	}
	return map[string]any{"hosts": r.hostsAny()}
}

func (r *registerVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return convertMap(r.native(), typeDesc)
}

func (r *registerVal) ConvertToType(t ref.Type) ref.Val { return convertToType(r, t) }
func (r *registerVal) Equal(o ref.Val) ref.Val          { return types.Bool(o == r) }
func (r *registerVal) Type() ref.Type                   { return types.MapType }
func (r *registerVal) Value() any                       { return r }

func hostsAny(h map[string]map[string]any) map[string]any {
	out := make(map[string]any, len(h))
	for k, v := range h {
		out[k] = v
	}
	return out
}

func convertMap(m map[string]any, typeDesc reflect.Type) (any, error) {
	if typeDesc.Kind() == reflect.Interface || typeDesc == reflect.TypeOf(m) {
		return m, nil
	}
	return nativeToValue(m).ConvertToNative(typeDesc)
}

func convertToType(v ref.Val, t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return v
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to %s", t.TypeName())
}

// stringIterator walks a fixed list of keys.
type stringIterator struct {
	keys []string
	i    int
}

func newStringIterator(keys []string) *stringIterator { return &stringIterator{keys: keys} }

func (it *stringIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

func (it *stringIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	k := it.keys[it.i]
	it.i++
	return types.String(k)
}

func (it *stringIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("iterator cannot be converted")
}
func (it *stringIterator) ConvertToType(ref.Type) ref.Val { return types.NewErr("iterator") }
func (it *stringIterator) Equal(o ref.Val) ref.Val        { return types.Bool(o == it) }
func (it *stringIterator) Type() ref.Type                 { return types.IteratorType }
func (it *stringIterator) Value() any                     { return it }
