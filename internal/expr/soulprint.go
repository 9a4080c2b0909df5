package expr

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// soulprintVal is the soulprint root: self, hosts, and the receiver of
// soulprint.where("…") (which filters the incarnation's members).
type soulprintVal struct {
	sp Soulprint
}

var _ traits.Mapper = (*soulprintVal)(nil)

// soulprintFields are the fields soulprint has; anything else is a compile
// error.
var soulprintFields = []string{"self", "hosts"}

func (s *soulprintVal) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	switch k {
	case "self":
		return nativeToValue(orEmpty(s.sp.Self)), true
	case "hosts":
		return hostList(s.sp.Hosts), true
	}
	return nil, false
}

// hostList wraps the host facts as a CEL list without copying them
// (elements are adapted lazily), so per-host evaluations stay cheap.
func hostList(hosts []map[string]any) ref.Val {
	if hosts == nil {
		hosts = []map[string]any{}
	}
	return nativeToValue(hosts)
}

func (s *soulprintVal) Get(key ref.Val) ref.Val {
	v, ok := s.Find(key)
	if !ok {
		return types.NewErr("soulprint has no field %v (it has self, hosts and where(\"…\"))", key)
	}
	return v
}

func (s *soulprintVal) Contains(key ref.Val) ref.Val {
	_, ok := s.Find(key)
	return types.Bool(ok)
}

func (s *soulprintVal) Size() ref.Val                    { return types.Int(len(soulprintFields)) }
func (s *soulprintVal) Iterator() traits.Iterator        { return newStringIterator(soulprintFields) }
func (s *soulprintVal) ConvertToType(t ref.Type) ref.Val { return convertToType(s, t) }
func (s *soulprintVal) Equal(o ref.Val) ref.Val          { return types.Bool(o == s) }
func (s *soulprintVal) Type() ref.Type                   { return types.MapType }
func (s *soulprintVal) Value() any                       { return s }

func (s *soulprintVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	hosts := make([]any, len(s.sp.Hosts))
	for i, h := range s.sp.Hosts {
		hosts[i] = h
	}
	return convertMap(map[string]any{"self": orEmpty(s.sp.Self), "hosts": hosts}, typeDesc)
}

// predicate compiles (once) a where("…") predicate over self.
func (e *Env) predicate(src string) (cel.Program, error) {
	type entry struct {
		p   cel.Program
		err error
	}
	if v, ok := e.predCache.Load(src); ok {
		return v.(entry).p, v.(entry).err
	}
	p, err := func() (cel.Program, error) {
		ast, iss := e.predicates.Compile(src)
		if iss.Err() != nil {
			return nil, fmt.Errorf("where(%q): %w", src, issuesError(iss, []string{"self"}))
		}
		if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
			return nil, fmt.Errorf("where(%q): the predicate must be boolean, it yields %s", src, t)
		}
		return e.predicates.Program(ast, cel.CostLimit(e.costLimit))
	}()
	if e.cached.Add(1) > maxCached {
		return p, err
	}
	v, _ := e.predCache.LoadOrStore(src, entry{p, err})
	return v.(entry).p, v.(entry).err
}

// filterHosts keeps the elements of hosts for which pred holds with the
// element bound to self.
func (e *Env) filterHosts(hosts traits.Lister, pred ref.Val) ref.Val {
	src, ok := pred.(types.String)
	if !ok {
		return types.NewErr("where() takes a predicate string, got %s", pred.Type().TypeName())
	}
	prg, err := e.predicate(string(src))
	if err != nil {
		return types.WrapErr(err)
	}
	var out []ref.Val
	it := hosts.Iterator()
	for it.HasNext() == types.True {
		h := it.Next()
		res, _, err := prg.Eval(map[string]any{"self": h})
		if err != nil {
			return types.NewErr("where(%q): %v", string(src), err)
		}
		b, ok := res.(types.Bool)
		if !ok {
			return types.NewErr("where(%q): the predicate yielded %s, not a boolean", string(src), res.Type().TypeName())
		}
		if b {
			out = append(out, h)
		}
	}
	return nativeToValue(out)
}

// whereOnMap implements soulprint.where("…"): the receiver must be the
// soulprint root, whose members are filtered.
func (e *Env) whereOnMap(recv, pred ref.Val) ref.Val {
	s, ok := recv.(*soulprintVal)
	if !ok {
		return types.NewErr("where() on a map is only defined for soulprint (soulprint.where(\"…\") filters the incarnation's members)")
	}
	members, ok := hostList(s.sp.Members).(traits.Lister)
	if !ok {
		return types.NewErr("soulprint members are not a list")
	}
	return e.filterHosts(members, pred)
}

// whereOnList implements <list>.where("…").
func (e *Env) whereOnList(recv, pred ref.Val) ref.Val {
	l, ok := recv.(traits.Lister)
	if !ok {
		return types.NewErr("where() needs a list receiver, got %s", recv.Type().TypeName())
	}
	return e.filterHosts(l, pred)
}
