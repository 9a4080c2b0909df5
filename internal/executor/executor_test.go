package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/expr"
	_ "github.com/soulstack/soulstack/internal/module/core"
	"github.com/soulstack/soulstack/internal/soul"
)

// host is a real module runner confined to a temp root.
type host struct {
	root   string
	facts  map[string]any
	runner *soul.ModuleRunner
}

func newHost(t *testing.T) *host {
	t.Helper()
	root := t.TempDir()
	facts := map[string]any{"sid": "h1", "os": map[string]any{"family": "debian"}}
	return &host{root: root, facts: facts, runner: &soul.ModuleRunner{Root: root, Facts: func() map[string]any { return facts }}}
}

// run parses main.yml (plus extra files) as a destiny and runs it.
func (h *host) run(t *testing.T, mainYML string, input map[string]any, check bool) domain.Result {
	t.Helper()
	files := map[string][]byte{"main.yml": []byte(mainYML)}
	return h.runFiles(t, files, input, check)
}

func (h *host) runFiles(t *testing.T, files map[string][]byte, input map[string]any, check bool) domain.Result {
	t.Helper()
	if _, err := dsl.ParseDestiny("t", files, nil); err != nil {
		t.Fatalf("destiny does not validate: %v", err)
	}
	noSleep := func(context.Context, time.Duration) error { return nil }
	return executor.RunBundle(context.Background(), &dispatch.Bundle{Destiny: "t", Files: files, Input: input}, h.facts,
		executor.Options{Check: check, Call: executor.CallerFor(h.runner), Sleep: noSleep})
}

func statuses(ts []domain.TaskResult) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name+"="+string(t.Status()))
	}
	return out
}

func TestSiteDestinyIsIdempotent(t *testing.T) {
	h := newHost(t)
	files, err := executor.ReadDir("testdata/site")
	if err != nil {
		t.Fatal(err)
	}
	first := h.runFiles(t, files, map[string]any{"title": "Soul"}, false)
	if first.Failed {
		t.Fatalf("first run failed: %s", first.Msg)
	}
	want := []string{"Site directory=changed", "Index page=changed", "Pages=changed", "Reload notice only when the index changed=ok"}
	if d := cmp.Diff(want, statuses(first.Tasks)); d != "" {
		t.Fatalf("first run (-want +got):\n%s", d)
	}
	idx, err := os.ReadFile(filepath.Join(h.root, "srv/site/index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(idx); got != "<h1>Soul</h1>\n<p>Soul from h1</p>\n" {
		t.Fatalf("index.html = %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(h.root, "srv/site/b.html")); string(b) != "page b (1)\n" {
		t.Fatalf("b.html = %q", b)
	}
	if d := cmp.Diff(map[string]any{"index_changed": true, "pages": int64(2)}, first.Output); d != "" {
		t.Fatalf("output (-want +got):\n%s", d)
	}
	st, _ := os.Stat(filepath.Join(h.root, "srv/site/index.html"))

	second := h.runFiles(t, files, map[string]any{"title": "Soul"}, false)
	if second.Failed || second.Changed {
		t.Fatalf("second run: failed=%v changed=%v msg=%s", second.Failed, second.Changed, second.Msg)
	}
	want = []string{"Site directory=ok", "Index page=ok", "Pages=ok", "Reload notice only when the index changed=skipped"}
	if d := cmp.Diff(want, statuses(second.Tasks)); d != "" {
		t.Fatalf("second run (-want +got):\n%s", d)
	}
	st2, _ := os.Stat(filepath.Join(h.root, "srv/site/index.html"))
	if !st.ModTime().Equal(st2.ModTime()) {
		t.Fatal("second run touched index.html")
	}

	check := h.runFiles(t, files, map[string]any{"title": "Changed"}, true)
	if check.Failed || !check.Changed {
		t.Fatalf("check run: failed=%v changed=%v msg=%s", check.Failed, check.Changed, check.Msg)
	}
	if !strings.Contains(check.Tasks[1].Diff, "Changed") {
		t.Fatalf("check mode diff does not show the new content: %q", check.Tasks[1].Diff)
	}
	idx2, _ := os.ReadFile(filepath.Join(h.root, "srv/site/index.html"))
	if string(idx2) != string(idx) {
		t.Fatal("check mode changed the file")
	}
}

func TestTaskKeys(t *testing.T) {
	cases := []struct {
		name   string
		yml    string
		input  map[string]any
		want   []string
		failed bool
		check  func(t *testing.T, r domain.Result)
	}{
		{
			name: "when false skips, true runs",
			yml: `
tasks:
  - {name: a, module: core.test.echo, when: 'soulprint.self.os.family == "redhat"', params: {message: x}}
  - {name: b, module: core.test.echo, when: 'soulprint.self.os.family == "debian"', params: {message: y}}
`,
			want: []string{"a=skipped", "b=ok"},
		},
		{
			name: "vars are visible to params and when",
			yml: `
tasks:
  - name: a
    module: core.test.echo
    vars: {greeting: "hi ${ soulprint.self.sid }"}
    when: vars.greeting.startsWith("hi")
    params: {message: "${ vars.greeting }"}
`,
			want: []string{"a=ok"},
			check: func(t *testing.T, r domain.Result) {
				if r.Tasks[0].Stdout != "hi h1" {
					t.Errorf("stdout = %q", r.Tasks[0].Stdout)
				}
			},
		},
		{
			name: "failure stops later tasks, onfail handler runs, run fails",
			yml: `
tasks:
  - {name: boom, module: core.test.fail, register: boom, params: {message: broken}}
  - {name: later, module: core.test.ping}
  - {name: handler, module: core.test.echo, onfail: [boom], params: {message: cleanup}}
`,
			want:   []string{"boom=failed", "later=skipped", "handler=ok"},
			failed: true,
		},
		{
			name: "onfail does not run when nothing failed; require runs after success",
			yml: `
tasks:
  - {name: fine, module: core.test.ping, register: fine}
  - {name: handler, module: core.test.echo, onfail: [fine], params: {message: cleanup}}
  - {name: needs, module: core.test.ping, require: [fine]}
`,
			want: []string{"fine=ok", "handler=skipped", "needs=ok"},
		},
		{
			name: "onchanges skips when nothing changed",
			yml: `
tasks:
  - {name: probe, module: core.exec.run, register: probe, changed_when: false, params: {command: "true"}}
  - {name: restart, module: core.test.echo, onchanges: [probe], params: {message: restart}}
`,
			want: []string{"probe=ok", "restart=skipped"},
		},
		{
			name: "changed_when and failed_when override the module",
			yml: `
tasks:
  - name: cmd
    module: core.exec.run
    changed_when: 'register.self.stdout.contains("changed")'
    failed_when: 'register.self.stdout.contains("bad")'
    params: {command: "echo same; exit 3"}
`,
			want: []string{"cmd=ok"},
		},
		{
			name: "failed_when true fails a successful command",
			yml: `
tasks:
  - {name: cmd, module: core.exec.run, failed_when: '!contains(register.self.stdout, "status:ok")', params: {command: "echo status:degraded"}}
`,
			want:   []string{"cmd=failed"},
			failed: true,
		},
		{
			name: "retry until: the seed health gate passes once healthy",
			yml: `
tasks:
  - name: Wait until the host is healthy again
    module: core.exec.run
    changed_when: false
    retry:
      count: 12
      delay: 5s
      until: contains(register.self.stdout, "status:ok")
    failed_when: '!contains(register.self.stdout, "status:ok")'
    params:
      cmd: /bin/sh
      args: ["-c", "n=$(cat $COUNTER 2>/dev/null || echo 0); n=$((n+1)); echo $n > $COUNTER; [ $n -ge 3 ] && echo status:ok || echo status:starting"]
      env: {COUNTER: "@COUNTER@"}
`,
			want: []string{"Wait until the host is healthy again=ok"},
			check: func(t *testing.T, r domain.Result) {
				if got := r.Tasks[0].Data["attempts"]; got != int64(3) {
					t.Errorf("attempts = %v, want 3", got)
				}
			},
		},
		{
			name: "retry until never true fails after count attempts",
			yml: `
tasks:
  - name: gate
    module: core.exec.run
    changed_when: false
    retry: {count: 4, delay: 1s, until: 'contains(register.self.stdout, "status:ok")'}
    failed_when: '!contains(register.self.stdout, "status:ok")'
    params: {command: "echo status:down"}
`,
			want:   []string{"gate=failed"},
			failed: true,
			check: func(t *testing.T, r domain.Result) {
				if got := r.Tasks[0].Data["attempts"]; got != int64(4) {
					t.Errorf("attempts = %v, want 4", got)
				}
			},
		},
		{
			name: "an exhausted until fails the task without failed_when (SPEC §5)",
			yml: `
tasks:
  - name: gate
    module: core.exec.run
    changed_when: false
    retry: {count: 3, delay: 1s, until: 'contains(register.self.stdout, "status:ok")'}
    params: {command: "echo status:down"}
`,
			want:   []string{"gate=failed"},
			failed: true,
			check: func(t *testing.T, r domain.Result) {
				if !strings.Contains(r.Tasks[0].Msg, "until never held after 3 attempts") {
					t.Errorf("msg = %q", r.Tasks[0].Msg)
				}
			},
		},
		{
			name: "failed_when alone decides after an exhausted until",
			yml: `
tasks:
  - name: gate
    module: core.exec.run
    changed_when: false
    retry: {count: 2, delay: 1s, until: 'contains(register.self.stdout, "status:ok")'}
    failed_when: "false"
    params: {command: "echo status:down"}
`,
			want: []string{"gate=ok"},
		},
		{
			name: "loop task whose vars read item finalizes (failed_when after the loop)",
			yml: `
tasks:
  - name: each
    module: core.test.echo
    loop: [a, b]
    vars: {label: "${ item }-x"}
    changed_when: false
    failed_when: "false"
    params: {message: "${ vars.label }"}
`,
			want: []string{"each=ok"},
		},
		{
			name: "loop over a map: entries in key order, item {key, value} (SPEC §9)",
			yml: `
tasks:
  - name: each
    module: core.test.echo
    register: each
    loop: "${ {'k9': 9, 'k1': 1, 'k5': 5, 'k3': 3, 'k7': 7, 'k2': 2, 'k8': 8, 'k4': 4, 'k6': 6} }"
    params: {message: "${ item.key }=${ item.value }"}
  - name: joined
    module: core.test.echo
    params: {message: "${ join(register.each.results.map(r, r.stdout), ',') }"}
`,
			want: []string{"each=ok", "joined=ok"},
			check: func(t *testing.T, r domain.Result) {
				if got := r.Tasks[1].Stdout; got != "k1=1,k2=2,k3=3,k4=4,k5=5,k6=6,k7=7,k8=8,k9=9" {
					t.Errorf("order = %q", got)
				}
			},
		},
		{
			name: "timeout fails the task",
			yml: `
tasks:
  - {name: slow, module: core.exec.run, timeout: 200ms, params: {command: "sleep 5"}}
`,
			want:   []string{"slow=failed"},
			failed: true,
		},
		{
			name: "loop registers results per item",
			yml: `
tasks:
  - {name: each, module: core.test.echo, loop: ["x", "y", "z"], register: each, params: {message: "${ item }-${ loop_index }"}}
  - {name: count, module: core.test.echo, params: {message: "${ size(register.each.results) } ${ register.each.results[2].stdout }"}}
`,
			want: []string{"each=ok", "count=ok"},
			check: func(t *testing.T, r domain.Result) {
				if r.Tasks[1].Stdout != "3 z-2" {
					t.Errorf("stdout = %q", r.Tasks[1].Stdout)
				}
			},
		},
		{
			name: "block runs children in order; when on the block gates all",
			yml: `
tasks:
  - name: blk
    block:
      - {name: one, module: core.test.echo, register: one, params: {message: "1"}}
      - {name: two, module: core.test.echo, params: {message: "${ register.one.stdout }2"}}
  - name: skipped block
    when: "false"
    block:
      - {name: three, module: core.test.fail}
`,
			want: []string{"blk=ok", "skipped block=skipped"},
			check: func(t *testing.T, r domain.Result) {
				if got := r.Tasks[0].Tasks[1].Stdout; got != "12" {
					t.Errorf("block child stdout = %q", got)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			yml := strings.ReplaceAll(tc.yml, "@COUNTER@", filepath.Join(t.TempDir(), "n"))
			r := h.run(t, yml, tc.input, false)
			if d := cmp.Diff(tc.want, statuses(r.Tasks)); d != "" {
				t.Fatalf("statuses (-want +got):\n%s\nmsg: %s", d, r.Msg)
			}
			if r.Failed != tc.failed {
				t.Fatalf("failed = %v, want %v (msg %q)", r.Failed, tc.failed, r.Msg)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestCheckModeSkipsCommandsButRunsProbes(t *testing.T) {
	h := newHost(t)
	marker := filepath.Join(t.TempDir(), "ran")
	r := h.run(t, `
tasks:
  - {name: probe, module: core.exec.run, register: p, changed_when: false, params: {command: "echo probed"}}
  - {name: mutate, module: core.exec.run, params: {command: "touch `+marker+`"}}
`, nil, true)
	if r.Failed {
		t.Fatalf("check run failed: %s", r.Msg)
	}
	if r.Tasks[0].Stdout != "probed" {
		t.Fatalf("probe did not run in check mode: %+v", r.Tasks[0])
	}
	if !r.Tasks[1].Unknown || r.Tasks[1].Status() != domain.StatusUnknown || !strings.Contains(r.Tasks[1].Msg, "would run") {
		t.Fatalf("a command in check mode is not reported unknown (would run): %+v", r.Tasks[1])
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("check mode executed a command")
	}
}

func TestFinalizeSeesRegisterAcrossHosts(t *testing.T) {
	// The probe idiom: failed_when reads the task's own register, which the
	// engine fills with every answering host before finalizing.
	env := expr.ForKind(expr.KindScenario)
	task := &dsl.Task{Name: "probe", Module: "core.exec.run", Register: "redis_role", ChangedWhen: "false",
		FailedWhen: "size(register.redis_role) < incarnation.host_count"}
	regs := expr.NewRegisters()
	raw := domain.Result{Changed: true, Stdout: "master"}
	regs.Set("redis_role", "h1", raw)
	regs.Set("redis_role", "h2", domain.Result{Changed: true, Stdout: "slave"})
	act := &expr.Activation{Registers: regs, CurrentSID: "h1", Incarnation: map[string]any{"host_count": int64(3)}}
	got := executor.Finalize(context.Background(), task, act, raw, env)
	if !got.Failed || got.Changed {
		t.Fatalf("2 of 3 hosts answered: want failed and unchanged, got %+v", got)
	}
	regs.Set("redis_role", "h3", domain.Result{Stdout: "slave"})
	got = executor.Finalize(context.Background(), task, act, raw, env)
	if got.Failed {
		t.Fatalf("all hosts answered: want success, got %+v", got)
	}
}

func TestMask(t *testing.T) {
	r := domain.Result{Stdout: "password is s3cret!", Msg: "s3cret", Data: map[string]any{"x": []any{"a s3cret"}},
		Results: []domain.Result{{Stderr: "s3cret"}}}
	m := executor.Mask(r, []string{"s3cret", ""})
	if m.Stdout != "password is ****!" || m.Msg != "****" || m.Data["x"].([]any)[0] != "a ****" || m.Results[0].Stderr != "****" {
		t.Fatalf("not masked: %+v", m)
	}
	if r.Stdout != "password is s3cret!" {
		t.Fatal("Mask modified its input")
	}
}

// TestMaskFindsSecretsInTheirOutputForms: a multi-line secret (a private
// key given as a secret input) never appears whole in a diff, whose lines
// each start with + or -, nor in JSON output, where its line breaks are
// \n escapes; Mask finds it there too.
func TestMaskFindsSecretsInTheirOutputForms(t *testing.T) {
	key := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIFakeKeyMaterial0123456789\n-----END PRIVATE KEY-----\n"
	r := domain.Result{
		Diff:   "--- /etc/ssl/app.key\n+++ /etc/ssl/app.key\n@@ -0,0 +1,3 @@\n+-----BEGIN PRIVATE KEY-----\n+MC4CAQAwBQYDK2VwBCIEIFakeKeyMaterial0123456789\n+-----END PRIVATE KEY-----\n",
		Stdout: `{"content": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIFakeKeyMaterial0123456789\n-----END PRIVATE KEY-----\n"}`,
		Stderr: "line 2: MC4CAQAwBQYDK2VwBCIEIFakeKeyMaterial0123456789\r\n",
		Data:   map[string]any{"pw": `say "hi" <b>`},
	}
	m := executor.Mask(r, []string{key, `say "hi" <b>`})
	for what, text := range map[string]string{"diff": m.Diff, "stdout": m.Stdout, "stderr": m.Stderr} {
		if strings.Contains(text, "FakeKeyMaterial") {
			t.Errorf("%s shows the secret: %q", what, text)
		}
	}
	if m.Data["pw"] != "****" {
		t.Errorf("data = %v", m.Data)
	}
	if !strings.Contains(m.Diff, "--- /etc/ssl/app.key") {
		t.Errorf("the diff lost more than the secret: %q", m.Diff)
	}
	if got := executor.MaskString(`{"v":"say \"hi\" \u003cb\u003e"}`, []string{`say "hi" <b>`}); strings.Contains(got, "hi") {
		t.Errorf("MaskString of the HTML-escaped JSON form = %q", got)
	}
	if got := executor.MaskValue(map[string]any{"d": "+MC4CAQAwBQYDK2VwBCIEIFakeKeyMaterial0123456789"}, []string{key}); strings.Contains(got.(map[string]any)["d"].(string), "FakeKey") {
		t.Errorf("MaskValue = %v", got)
	}
}

// TestMaskFindsTheElementsOfASecretListOrMap: a secret list or map input
// reaches Mask as its JSON text, but tasks render its elements one by one
// (${ input.creds.password }); every string and number inside is masked.
func TestMaskFindsTheElementsOfASecretListOrMap(t *testing.T) {
	secrets := []string{`{"user":"app-user","password":"hunter2-map","port":5432,"tls":true,"keys":["k-one","k-two"]}`}
	r := domain.Result{Msg: "login app-user/hunter2-map on 5432 with k-two: true", Stdout: "k-one"}
	m := executor.Mask(r, secrets)
	if m.Msg != "login ****/**** on **** with ****: true" || m.Stdout != "****" {
		t.Fatalf("not masked: %+v", m)
	}
	if got := executor.MaskString("[a-secret] x", []string{`["a-secret"]`}); got != "[****] x" {
		t.Errorf("MaskString = %q", got)
	}
	in := []string{`["x-secret"]`, "plain"}
	executor.Mask(r, in[:1])
	if in[1] != "plain" {
		t.Error("Mask wrote into its caller's slice")
	}
}
