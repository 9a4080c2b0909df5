package ansibleimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dsl"
	_ "github.com/soulstack/soulstack/internal/module/core" // the module schemas the import maps onto
)

// writeImport writes im under a temp dir and returns it.
func writeImport(t *testing.T, im *Import) string {
	t.Helper()
	dir := t.TempDir()
	for p, b := range im.Files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestImportRedisRole(t *testing.T) {
	r, err := LoadRole("testdata/roles/redis")
	if err != nil {
		t.Fatal(err)
	}
	im, err := ImportRole(r)
	if err != nil {
		t.Fatal(err)
	}
	dir := writeImport(t, im)
	t.Logf("destiny:\n%s", im.Files["destiny/redis/main.yml"])
	t.Logf("report:\n%s", im.Files["IMPORT.md"])
	svc, problems := dsl.Load(dir)
	manual := im.Counts()[Manual]
	if manual == 0 && len(problems) > 0 {
		t.Errorf("no task is manual, yet the import does not validate:\n%v", problems)
	}
	if manual > 0 && len(problems) == 0 {
		t.Errorf("%d tasks are manual, yet the import validates: a manual task must stop validation", manual)
	}
	_ = svc
	for _, row := range im.Rows {
		if row.Output == "" || strings.HasSuffix(row.Output, ":0") {
			t.Errorf("%s (%s) has no output line: %q", row.Upstream, row.Name, row.Output)
		}
	}
}

func TestImportPlaybook(t *testing.T) {
	im, err := ImportPlaybook("testdata/playbooks/site.yml", []string{"testdata/roles"})
	if err != nil {
		t.Fatal(err)
	}
	dir := writeImport(t, im)
	_, problems := dsl.Load(dir)
	site := string(im.Files["scenario/site/main.yml"])
	for _, want := range []string{"on:\n      - cache", "serial: 2", "destiny: redis", "failed_when: '!contains(register.self.stdout, \"PONG\")'"} {
		if !strings.Contains(site, want) {
			t.Errorf("scenario/site/main.yml lacks %q:\n%s", want, site)
		}
	}
	// The play gives redis_maxmemory a string where the role's default is
	// an integer: that row is manual, and validation stops there too.
	var found bool
	for _, r := range im.Rows {
		if r.Name == "role redis" {
			found = true
			if r.Fidelity != Manual || !strings.Contains(strings.Join(r.Notes, " "), "redis_maxmemory") {
				t.Errorf("role row = %s %v, want manual about redis_maxmemory", r.Fidelity, r.Notes)
			}
			if r.Upstream != "site.yml:14" {
				t.Errorf("role row upstream = %s, want site.yml:14", r.Upstream)
			}
		}
	}
	if !found {
		t.Fatal("no row for the play's role")
	}
	var mentions bool
	for _, p := range problems {
		if strings.Contains(p.Message, "redis_maxmemory") {
			mentions = true
		}
	}
	if !mentions {
		t.Errorf("validation does not stop at redis_maxmemory: %v", problems)
	}
	ess := string(im.Files["essence/_default.yaml"])
	if !strings.Contains(ess, "redis_port: 6380") {
		t.Errorf("the play's role var is not the essence's value:\n%s", ess)
	}
}

// TestImportPinnedRoles imports every pinned public role: a role whose
// report has no manual task validates, one with a manual task does not
// (it stops at the task's line), every row names where it went, and the
// idioms that real roles share come out as the report says.
func TestImportPinnedRoles(t *testing.T) {
	ents, err := os.ReadDir("testdata/roles")
	if err != nil {
		t.Fatal(err)
	}
	total, exact := 0, 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			r, err := LoadRole(filepath.Join("testdata/roles", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			im, err := ImportRole(r)
			if err != nil {
				t.Fatal(err)
			}
			n := im.Counts()
			total += len(im.Rows)
			exact += n[Exact]
			_, problems := dsl.Load(writeImport(t, im))
			if n[Manual] == 0 && len(problems) > 0 {
				t.Errorf("no task is manual, yet the import does not validate:\n%v", problems)
			}
			if n[Manual] > 0 && len(problems) == 0 {
				t.Errorf("%d tasks are manual, yet the import validates", n[Manual])
			}
			for _, row := range im.Rows {
				if row.Output == "" || strings.HasSuffix(row.Output, ":0") {
					t.Errorf("%s (%s) has no output line: %q", row.Upstream, row.Name, row.Output)
				}
			}
			t.Logf("%s: %d tasks, %v", e.Name(), len(im.Rows), n)
		})
	}
	t.Logf("all pinned roles: %d of %d tasks exact", exact, total)
}

// TestImportIdioms pins what the importer makes of idioms the pinned roles
// use.
func TestImportIdioms(t *testing.T) {
	load := func(name string) *Import {
		r, err := LoadRole("testdata/roles/" + name)
		if err != nil {
			t.Fatal(err)
		}
		im, err := ImportRole(r)
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	nginx := load("nginx")
	d := string(nginx.Files["destiny/nginx/main.yml"])
	// A task only a BSD host runs is left out, and the report says so.
	left := 0
	for _, row := range nginx.Rows {
		if row.Output == "(left out)" {
			left++
			notes := strings.Join(row.Notes, " ")
			if row.Fidelity != Exact || !(strings.Contains(notes, "never runs on a host a soul runs on") || strings.Contains(notes, "no task notifies it")) {
				t.Errorf("left-out row %s: %+v", row.Upstream, row)
			}
		}
	}
	if left == 0 || strings.Contains(d, "pkgng") || strings.Contains(d, "openbsd") {
		t.Errorf("the FreeBSD/OpenBSD tasks should be left out (%d rows):\n%s", left, d)
	}
	// "set nginx_user unless the inventory did" becomes an optional input.
	if !strings.Contains(d, "type(vars.nginx_user) != type(null) ? vars.nginx_user : vars.__nginx_user") {
		t.Errorf("nginx_user is not an overridable input:\n%s", d)
	}
	if !strings.Contains(string(nginx.Files["essence/_default.yaml"]), "nginx_user: null") {
		t.Errorf("the essence does not offer nginx_user:\n%s", nginx.Files["essence/_default.yaml"])
	}
	// A fact written into a file name keeps Ansible's spelling.
	mc := string(load("memcached").Files["destiny/memcached/main.yml"])
	if !strings.Contains(mc, `"debian": "Debian"`) {
		t.Errorf("the template name does not spell the family as Ansible does:\n%s", mc)
	}
	// apt: update_cache alone refreshes the index; a list variable of
	// packages goes to names.
	if !strings.Contains(mc, "core.pkg.index_refreshed") {
		t.Errorf("update_cache alone is not an index refresh:\n%s", mc)
	}
}

func TestPyEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`{{ x | regex_replace("(\d+)", "\1") }}`: `{{ x | regex_replace("(\\d+)", "\\1") }}`,
		`{{ "a\nb" }} \d`:                        `{{ "a\nb" }} \d`,
		`{{ 'it\'s' }}`:                          `{{ 'it\'s' }}`,
	} {
		if got := pyEscapes(in); got != want {
			t.Errorf("pyEscapes(%q) = %q, want %q", in, got, want)
		}
	}
}
