package ansibleimport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadRoleRedis(t *testing.T) {
	r, err := LoadRole("testdata/roles/redis")
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "redis" {
		t.Errorf("name = %q, want redis", r.Name)
	}
	var got []string
	for _, tk := range r.Tasks {
		got = append(got, tk.Module)
	}
	want := []string{"include_vars", "set_fact", "file", "template", "include_tasks", "include_tasks", "include_tasks", "service"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tasks/main.yml modules (-want +got):\n%s", diff)
	}
	tpl := r.Tasks[3]
	if tpl.Line != 17 || tpl.Args["src"] != "redis.conf.j2" || tpl.keyword("notify") != "restart redis" {
		t.Errorf("template task = line %d, args %v, notify %q", tpl.Line, tpl.Args, tpl.keyword("notify"))
	}
	if inc := r.Tasks[5]; inc.FreeForm != "setup-Debian.yml" || inc.keyword("when") != "ansible_facts.os_family == 'Debian'" {
		t.Errorf("include_tasks = %q when %q", inc.FreeForm, inc.keyword("when"))
	}
	if len(r.TaskFiles["setup-Debian.yml"]) != 1 {
		t.Errorf("setup-Debian.yml has %d tasks, want 1", len(r.TaskFiles["setup-Debian.yml"]))
	}
	h := r.Handlers[0]
	if h.Name != "restart redis" || h.Module != "service" || h.Args["name"] != "{{ redis_daemon }}" || h.Args["state"] != "restarted" {
		t.Errorf("handler = %+v", h)
	}
	if r.Defaults == nil || r.Defaults.Names[0] != "redis_enablerepo" || len(r.Defaults.Names) != 22 {
		t.Errorf("defaults = %v", r.Defaults)
	}
	if _, ok := r.VarFiles["Debian.yml"]; !ok {
		t.Errorf("vars files = %v, want Debian.yml among them", r.VarFiles)
	}
	if diff := cmp.Diff([]string{"redis.conf.j2"}, r.Templates); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
}

func TestSplitFreeForm(t *testing.T) {
	for _, c := range []struct {
		in       string
		checkRaw bool
		free     string
		kv       map[string]string
	}{
		{`name={{ redis_daemon }} state=restarted`, false, "", map[string]string{"name": "{{ redis_daemon }}", "state": "restarted"}},
		{`{{ x }} a={{ y | default("b c") }}`, false, "{{ x }}", map[string]string{"a": `{{ y | default("b c") }}`}},
		{`name="{{ redis_daemon }}" state=restarted`, false, "", map[string]string{"name": "{{ redis_daemon }}", "state": "restarted"}},
		{`echo hello creates=/tmp/x`, true, "echo hello", map[string]string{"creates": "/tmp/x"}},
		{`/usr/bin/make install chdir='/src/my app'`, true, "/usr/bin/make install", map[string]string{"chdir": "/src/my app"}},
		// A command's key=value words stay in the command unless they are
		// one of its options.
		{`make prefix={{ p }} all chdir=/src`, true, "make prefix={{ p }} all", map[string]string{"chdir": "/src"}},
	} {
		free, kv := splitFreeForm(c.in, c.checkRaw)
		if free != c.free || !cmp.Equal(kv, c.kv) {
			t.Errorf("%s: free %q kv %v, want %q %v", c.in, free, kv, c.free, c.kv)
		}
	}
}
