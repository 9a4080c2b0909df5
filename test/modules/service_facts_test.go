package modules

import (
	"encoding/json"
	"testing"
)

// TestServiceFactsOnLabHost: core.service.facts (Ansible's service_facts)
// lists the host's services with their states, read in an expression as a
// role does (register.x.services['name'].state), in check mode too.
func TestServiceFactsOnLabHost(t *testing.T) {
	h := host(t)
	const unit = "/etc/systemd/system/soulfacts.service"
	reset := "systemctl disable --now soulfacts.service 2>/dev/null; rm -f " + unit + "; systemctl daemon-reload; rm -rf /srv/sf"
	sh(t, h, reset)
	t.Cleanup(func() { sh(t, h, reset) })
	sh(t, h, "mkdir -p /srv/sf; printf '[Service]\\nExecStart=/bin/sleep infinity\\n[Install]\\nWantedBy=multi-user.target\\n' > "+unit+
		"; systemctl daemon-reload; systemctl enable --now soulfacts.service")
	main := `input: {}
tasks:
  - {name: facts, module: core.service.facts, register: sf}
output:
  running: "${ register.sf.services['soulfacts.service'] }"
  journald: "${ register.sf.services['systemd-journald.service'].state }"
`
	for _, check := range []bool{true, false} {
		raw := applyRaw(t, h, "/srv/sf/d", main, check)
		var res struct {
			Output map[string]any `json:"output"`
		}
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			t.Fatalf("check=%v: %v %s", check, err, raw)
		}
		want := map[string]any{"name": "soulfacts.service", "state": "running", "status": "enabled", "source": "systemd"}
		got, _ := res.Output["running"].(map[string]any)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("check=%v: soulfacts.service = %v, want %v", check, got, want)
				break
			}
		}
		if res.Output["journald"] != "running" {
			t.Errorf("check=%v: systemd-journald.service state = %v (%s)", check, res.Output["journald"], raw)
		}
	}
	sh(t, h, "systemctl stop soulfacts.service")
	raw := applyRaw(t, h, "/srv/sf/d", main, false)
	var res struct {
		Output map[string]any `json:"output"`
	}
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Output["running"].(map[string]any); got["state"] != "stopped" {
		t.Errorf("after stop: %v", got)
	}
}
