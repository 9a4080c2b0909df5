package checker

import (
	"github.com/soulstack/soulstack/internal/executor"
)

// Secret vars (SPEC §10.2): a var declared secret: true keeps its real
// value for the commands a task runs, but the task's stored vars, step log,
// task_message and run_error show **** in its place. The masking is the
// executor's (executor.MaskString / MaskValue), so a secret is also found
// JSON-escaped, line by line and, for an object or array, element by
// element.

// secretText is the text a secret value takes in output: a string as
// itself, anything else as its JSON ("" for unset).
func secretText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return toJSON(v)
}

// secretValues returns the texts of the values vars holds for p's secret
// vars.
func secretValues(p *Procedure, vars map[string]any) []string {
	var out []string
	for _, d := range p.Vars {
		if d.Secret {
			if s := secretText(vars[d.Name]); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// maskVars returns a copy of vars fit to store: every secret var's value is
// **** and secrets are masked inside the other values too.
func maskVars(p *Procedure, vars map[string]any, secrets []string) map[string]any {
	if vars == nil {
		return nil
	}
	out := make(map[string]any, len(vars))
	for k, v := range vars {
		if d := p.Var(k); d != nil && d.Secret && v != nil {
			out[k] = executor.MaskText
			continue
		}
		out[k] = executor.MaskValue(v, secrets)
	}
	return out
}

// rememberSecrets adds the current values of the secret vars to the texts masked
// from here on (a value stays masked after a parse replaced it).
func (r *run) rememberSecrets() {
	for _, s := range secretValues(r.proc, r.vars) {
		if !r.secretSeen[s] {
			if r.secretSeen == nil {
				r.secretSeen = map[string]bool{}
			}
			r.secretSeen[s] = true
			r.secrets = append(r.secrets, s)
		}
	}
}

// mask masks the task's secrets in a text bound for the store.
func (r *run) mask(s string) string {
	if len(r.secrets) == 0 {
		return s
	}
	return executor.MaskString(s, r.secrets)
}

// maskData masks the task's secrets in a step-log line's data. The data
// is normalized first so that argv ([]string) and the like are reached.
func (r *run) maskData(data map[string]any) map[string]any {
	if len(r.secrets) == 0 || data == nil {
		return data
	}
	n, err := normalize(data)
	if err != nil {
		return map[string]any{"masked": executor.MaskText}
	}
	m, _ := executor.MaskValue(n, r.secrets).(map[string]any)
	return m
}

// shown is how an error message quotes a value of var d: its JSON, or ****
// when d is secret.
func shown(d *Var, v any) string {
	if d != nil && d.Secret {
		return executor.MaskText
	}
	return toJSON(v)
}
