package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/store"
)

// StateSealer seals and opens the values of the state keys a service's
// state_schema declares secret: true (SPEC §10.2, §10.5):
// internal/secrets.Store, under the key file of the secret store. The
// engine finds it on Config.Secrets.
type StateSealer interface {
	SealState(incarnation, key string, value []byte) (string, error)
	OpenState(incarnation, key, sealed string) ([]byte, error)
}

func (e *Engine) sealer() StateSealer {
	s, _ := e.cfg.Secrets.(StateSealer)
	return s
}

// openState returns the incarnation's state as the run's expressions read
// it: the sealed values of secret state keys opened in place of their ****.
// Each opened value becomes a secret of the run: masked wherever the run
// stores or streams it, and a canary in the taint rendering, so what is
// derived from it is masked too.
func (r *runner) openState() (map[string]any, error) {
	if len(r.inc.SealedState) == 0 {
		return r.inc.State, nil
	}
	s := r.e.sealer()
	if s == nil {
		return nil, fmt.Errorf("incarnation %s has sealed state keys and this keeper has no secret store to open them", r.inc.Name)
	}
	state := maps.Clone(r.inc.State)
	if state == nil {
		state = map[string]any{}
	}
	r.secretState = map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(r.inc.SealedState)) {
		b, err := s.OpenState(r.inc.Name, k, r.inc.SealedState[k])
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("state key %s of %s: the opened value is not JSON: %w", k, r.inc.Name, err)
		}
		state[k] = v
		r.secretState[k] = true
		r.addSecrets(secretString(v))
	}
	return state, nil
}

// sealState replaces the value of every secret state key of state by ****
// and returns their sealed values, for CommitRun. state holds the real
// values (the state_schema validated them).
func (r *runner) sealState(state map[string]any) (map[string]string, error) {
	keys := r.svc.SecretStateKeys()
	for k := range r.inc.SealedState {
		// A key sealed before stays sealed even if a later commit of the
		// service no longer declares it secret.
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	var out map[string]string
	for _, k := range keys {
		v, ok := state[k]
		if !ok {
			continue
		}
		s := r.e.sealer()
		if s == nil {
			return nil, fmt.Errorf("state key %s is declared secret: true and this keeper has no secret store to seal it", k)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("state key %s: %w", k, err)
		}
		sealed, err := s.SealState(r.inc.Name, k, b)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = sealed
		state[k] = executor.MaskText
	}
	return out, nil
}

// canaryValue returns a value of v's shape that differs from v in every
// leaf: strings by canary, numbers by one more, booleans negated, lists
// and maps element by element.
func canaryValue(v any) any {
	switch x := v.(type) {
	case string:
		return canary(x)
	case int64:
		return x + 1
	case int:
		return x + 1
	case uint64:
		return x + 1
	case float64:
		return x + 1
	case bool:
		return !x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canaryValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canaryValue(e)
		}
		return out
	}
	return v
}

// unsealedState is inc's state without its sealed keys (whose value there
// is ****, not theirs).
func unsealedState(inc store.Incarnation) map[string]any {
	if len(inc.SealedState) == 0 {
		return inc.State
	}
	out := make(map[string]any, len(inc.State))
	for k, v := range inc.State {
		if _, sealed := inc.SealedState[k]; !sealed {
			out[k] = v
		}
	}
	return out
}
