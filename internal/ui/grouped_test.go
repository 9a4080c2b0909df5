package ui_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/ui/uiseed"
)

var groupRowRE = regexp.MustCompile(`<tr class="group st-([a-z]+)" data-wave="(\d+)" data-status="[a-z]+">\s*<td>[^<]*</td>\s*<td>.*?</td>\s*<td class="n"><b>(\d+)</b>`)

// A run over more than 50 hosts is grouped by wave and status with
// counts; the failed-hosts view lists each failed host with the task
// that failed; a host's drill-down shows its tasks and the file diffs the
// run made there.
func TestRunGridGrouped(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if err := uiseed.Fleet(ctx, e.st, 150, e.now); err != nil {
		t.Fatal(err)
	}
	id, err := uiseed.BigRun(ctx, e.st, "edge", 120, e.now)
	if err != nil {
		t.Fatal(err)
	}
	c := e.session()
	body := e.page(c, "/ui/runs/"+id)
	contains(t, "grouped run", body, `<section id="host-groups">`, "<h3>120 hosts by wave and status</h3>",
		`<span class="badge st-changed">changed 120</span>`, // task 1 over every host
		`<span class="badge st-failed">failed 2</span>`,
		`<a href="/ui/runs/`+id+`/failed" id="failed-link">Failed on 2 hosts</a>`)
	lacks(t, "grouped run", body, `<table class="grid" id="grid">`, `data-sid=`)
	groups := map[string]string{}
	for _, m := range groupRowRE.FindAllStringSubmatch(body, -1) {
		groups["w"+m[2]+" "+m[1]] = m[3]
	}
	// host-00013 (wave 1) and host-00110 (wave 2) failed: i%97 == 13.
	want := map[string]string{"w1 changed": "99", "w1 failed": "1", "w2 changed": "19", "w2 failed": "1"}
	if fmt.Sprint(groups) != fmt.Sprint(want) {
		t.Errorf("host groups = %v, want %v", groups, want)
	}

	failed := e.page(c, "/ui/runs/"+id+"/failed")
	contains(t, "failed hosts", failed, "Failed hosts <span class=\"muted\">2 of 120</span>",
		`<a href="/ui/runs/`+id+`/hosts/host-00013">host-00013</a>`, `<a href="/ui/runs/`+id+`/hosts/host-00110">host-00110</a>`,
		"reload nginx", "nginx: configuration test failed")
	if n := strings.Count(failed, "/hosts/host-"); n != 2 {
		t.Errorf("failed view links %d hosts, want 2", n)
	}

	host := e.page(c, "/ui/runs/"+id+"/hosts/host-00013")
	contains(t, "host drill-down", host, `<span id="host-status"><span class="badge st-failed">failed</span></span>`,
		`<section id="host-diffs">`, "<b>render vhosts</b>", `<span class="d-del">-    listen 8080;</span>
<span class="d-add">&#43;    listen 80;</span>
<span class="d-">     server_name host-00013;</span>`,
		"reload nginx", "smoke test", `nginx: [emerg] unknown directive &#34;listn&#34;`)
	ok := e.page(c, "/ui/runs/"+id+"/hosts/host-00001")
	lacks(t, "another host", ok, "host-00013;")
	if status, _ := e.get(c, "/ui/runs/"+id+"/hosts/nobody"); status != 404 {
		t.Errorf("drill-down of a host not in the run: %d, want 404", status)
	}

	// A small run keeps the full grid, and its host headers drill down.
	small := e.page(c, "/ui/runs/"+runRestart)
	contains(t, "small run", small, `<table class="grid" id="grid">`, `<th class="host"><a href="/ui/runs/`+runRestart+`/hosts/web-1.example">`)
	web1 := e.page(c, "/ui/runs/"+runRestart+"/hosts/web-1.example")
	contains(t, "no diffs", web1, "This run changed no file on web-1.example")
}
