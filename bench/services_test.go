package bench

import (
	"testing"

	"github.com/soulstack/soulstack/internal/dsl"
	_ "github.com/soulstack/soulstack/internal/module/core" // the modules the services are validated against
)

// pingService is the fan-out benchmark's service: create and ping are the
// same one-task scenario (core.test.ping on every member), and the state
// records how many hosts answered.
var pingService = map[string]string{
	"service.yml": "name: ping\ndescription: one core.test.ping on every member (SPEC §15 fan-out)\n",
	"scenario/create/main.yml": `
state_changes:
  sets:
    pinged: "${ size(register.pong) }"
tasks:
  - name: ping
    module: core.test.ping
    register: pong
`,
	"scenario/ping/main.yml": `
state_changes:
  sets:
    pinged: "${ size(register.pong) }"
tasks:
  - name: ping
    module: core.test.ping
    register: pong
`,
}

// webService holds the operations of the Ansible comparison (SPEC §15),
// written for souls whose file modules are confined to their own root (a
// swarm, or `soul run --root`), so it needs no root and no packages:
//
//   - command: one command on every host (`ansible all -m command -a …`);
//   - create: three tasks — a directory, a file, a rendered template —
//     changing every host the first time; re-running it is the no-op run;
//   - rollout: the same three tasks as a `serial: 2` rolling update of a
//     new release (each wave runs the whole block before the next starts).
var webService = map[string]string{
	"service.yml": `name: web
description: the operations of the Ansible comparison (SPEC §15)
state_schema:
  type: object
  properties:
    release: {type: string}
    hosts: {type: integer}
`,
	"essence/_default.yaml": "site_dir: /srv/web\n",
	"scenario/command/main.yml": `
tasks:
  - name: uptime
    module: core.exec.run
    params:
      command: uptime
`,
	"scenario/create/main.yml": `
input:
  release:
    type: string
    default: "1.0"
state_changes:
  sets:
    release: "${ input.release }"
    hosts: "${ size(register.page) }"
tasks:
  - name: site directory
    module: core.file.directory
    params:
      path: "${ essence.site_dir }"
      mode: "0755"
  - name: index page
    module: core.file.present
    register: page
    params:
      path: "${ essence.site_dir }/index.html"
      content: "release ${ input.release } on ${ soulprint.self.sid }\n"
      mode: "0644"
  - name: site config
    module: core.file.rendered
    params:
      path: "${ essence.site_dir }/site.conf"
      template: templates/site.conf.tmpl
      vars:
        release: "${ input.release }"
`,
	"scenario/create/templates/site.conf.tmpl": "server {{ .soulprint.self.sid }}\nrelease {{ .vars.release }}\nroot {{ .essence.site_dir }}\n",
	"scenario/rollout/main.yml": `
input:
  release:
    type: string
    required: true
state_changes:
  sets:
    release: "${ input.release }"
tasks:
  - name: roll out, two hosts per wave
    serial: 2
    block:
      - name: site directory
        module: core.file.directory
        params:
          path: "${ essence.site_dir }"
          mode: "0755"
      - name: index page
        module: core.file.present
        params:
          path: "${ essence.site_dir }/index.html"
          content: "release ${ input.release } on ${ soulprint.self.sid }\n"
          mode: "0644"
      - name: site config
        module: core.file.rendered
        params:
          path: "${ essence.site_dir }/site.conf"
          template: templates/site.conf.tmpl
          vars:
            release: "${ input.release }"
`,
	"scenario/rollout/templates/site.conf.tmpl": "server {{ .soulprint.self.sid }}\nrelease {{ .vars.release }}\nroot {{ .essence.site_dir }}\n",
}

// TestServicesValidate is the fast sanity pass of this package (it runs in
// `go test ./...`): the benchmarks' service repositories pass the DSL's
// fail-closed validation, so a benchmark never dies on a stale scenario.
func TestServicesValidate(t *testing.T) {
	for name, files := range map[string]map[string]string{"ping": pingService, "web": webService, "five": fiveService, "health5": healthService} {
		svc, problems := dsl.LoadFS(mapFS(files))
		if err := problems.Err(); err != nil {
			t.Errorf("service %s: %v", name, err)
			continue
		}
		if svc.Manifest.Name != name {
			t.Errorf("service %s: manifest name %q", name, svc.Manifest.Name)
		}
	}
}
