package core

import (
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

// TestServiceMaskedRefusals: masked: true with what a masked unit cannot
// do is refused naming the param, before the host is looked at.
func TestServiceMaskedRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"started", map[string]any{"name": "x.service", "masked": true, "state": "started"}, "cannot be started"},
		{"restarted", map[string]any{"name": "x.service", "masked": true, "state": "restarted"}, "cannot be restarted"},
		{"reloaded", map[string]any{"name": "x.service", "masked": true, "state": "reloaded"}, "cannot be reloaded"},
		{"enabled", map[string]any{"name": "x.service", "masked": true, "enabled": true}, "cannot be enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.service.state", tc.params, &module.Env{Check: true})
			wantErrContains(t, err, "core.service.state on ", `param "masked"`, tc.want)
		})
	}
}

// TestServiceMaskedNeedsSystemd: on a host whose PID 1 is not systemd,
// masked is an error naming the param, in either direction.
func TestServiceMaskedNeedsSystemd(t *testing.T) {
	if systemdBooted() {
		t.Skip("PID 1 is systemd here: the refusal on other inits is tested where it is not (masking itself is tested on the lab host, test/modules)")
	}
	for _, want := range []bool{true, false} {
		_, err := runErr(t, "core.service.state", map[string]any{"name": "x.service", "masked": want}, &module.Env{Check: true})
		wantErrContains(t, err, `param "masked"`, "not systemd")
	}
}
