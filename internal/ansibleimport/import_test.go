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
