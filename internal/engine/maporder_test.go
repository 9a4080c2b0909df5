package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/soulstack/soulstack/internal/dispatch"
	_ "github.com/soulstack/soulstack/internal/module/core" // core.file.rendered
	"github.com/soulstack/soulstack/internal/soul"
)

// TestTemplateItemsInYAMLOrder (issue 37): a role's Jinja template writes
// `{% for k, v in m.items() %}` entries in the order the essence's YAML
// wrote them, as Ansible does. The engine's call carries the key order; it
// crosses the wire as JSON and the soul's real core.file.rendered renders
// with it — keys(), values() and the dict2items filter too. A map of the
// task's own vars: keeps its YAML order the same way.
func TestTemplateItemsInYAMLOrder(t *testing.T) {
	svc := loadService(t, map[string]string{
		"essence/_default.yaml": "sysctl: {vm.swappiness: 10, net.core.somaxconn: 4096, fs.file-max: 100000}\n",
		"scenario/deploy/templates/sysctl.conf.j2": "{% for k, v in essence.sysctl.items() %}{{ k }} = {{ v }}\n{% endfor %}" +
			"keys: {{ essence.sysctl.keys() | join(',') }}\n" +
			"values: {{ essence.sysctl.values() | join(',') }}\n" +
			"{% for e in limits | dict2items %}{{ e.key }}:{{ e.value }} {% endfor %}\n",
		"scenario/deploy/main.yml": `
tasks:
  - name: sysctl conf
    module: core.file.rendered
    vars:
      limits: {nofile: 65536, nproc: 4096, core: 0}
    params:
      path: /etc/sysctl.d/99-role.conf
      template: templates/sysctl.conf.j2
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: h1}]
expect:
  outcome: succeeded
`)
	w.run()
	calls := callsTo(w.Sim.Calls(), "sysctl conf")["h1"]
	if len(calls) != 1 || calls[0].Call == nil {
		t.Fatalf("calls of the template task: %+v", calls)
	}
	// As the gateway sends it and the soul decodes it.
	payload, err := json.Marshal(dispatch.Work{RunID: "r", TaskID: "t", Call: calls[0].Call})
	if err != nil {
		t.Fatal(err)
	}
	work, err := dispatch.DecodeWork(payload)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/sysctl.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := (&soul.ModuleRunner{Root: root}).Run(context.Background(), work)
	if res.Failed {
		t.Fatalf("rendering on the soul: %s", res.Msg)
	}
	got, err := os.ReadFile(filepath.Join(root, "etc/sysctl.d/99-role.conf"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "vm.swappiness = 10\nnet.core.somaxconn = 4096\nfs.file-max = 100000\n" +
		"keys: vm.swappiness,net.core.somaxconn,fs.file-max\n" +
		"values: 10,4096,100000\n" +
		"nofile:65536 nproc:4096 core:0 \n"
	if string(got) != want {
		t.Fatalf("rendered:\n%s\nwant (the YAML's order):\n%s", got, want)
	}
}

// TestDestinyLoopInYAMLOrder (issue 37): inside a destiny bundle (run on
// the soul) a loop over an essence map, and over a map of the destiny's own
// vars:, iterate in the order their YAML wrote them.
func TestDestinyLoopInYAMLOrder(t *testing.T) {
	svc := loadService(t, map[string]string{
		"essence/_default.yaml": "vhosts: {www: 80, api: 8080, admin: 9000}\n",
		"scenario/deploy/main.yml": `
tasks:
  - name: sites
    apply: {destiny: sites}
`,
		"destiny/sites/main.yml": `
tasks:
  - name: vhost
    module: core.test.echo
    loop: "${ essence.vhosts }"
    params: {message: "${ item.key }:${ item.value }"}
  - name: own
    module: core.test.echo
    vars:
      users: {zed: 1, amy: 2, kit: 3}
    params: {message: "${ join(keys(vars.users), \",\") }"}
`})
	w := newWorld(t, svc, "deploy", `
hosts: [{sid: h1}]
expect:
  outcome: succeeded
`)
	w.run()
	var got []string
	for _, c := range callsTo(w.Sim.Calls(), "sites")["h1"] {
		if c.Module != "" {
			got = append(got, c.Params["message"].(string))
		}
	}
	if want := []string{"www:80", "api:8080", "admin:9000", "zed,amy,kit"}; !slices.Equal(got, want) {
		t.Fatalf("destiny calls %v, want %v (the YAML's order)", got, want)
	}
}
