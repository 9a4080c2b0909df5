package ansibleimport

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/expr"
)

// The host every condition case is evaluated on: Ansible's facts of a
// Debian 12 amd64 host with 2 CPUs, and the soulprint a soul reports there.
var (
	hostSoulprint = map[string]any{
		"sid": "web-1", "hostname": "web-1.example.com", "kernel": "6.1.0", "init": "systemd", "cpus": int64(2), "memory_mb": int64(3936),
		"os":      map[string]any{"family": "debian", "name": "debian", "distribution": "debian", "version": "12", "codename": "bookworm", "arch": "amd64"},
		"network": map[string]any{"primary_ip": "10.0.0.5"},
	}
	// caseVars are the role's variables of every case (what the
	// importer reads from defaults/ and vars/).
	caseVars = map[string]any{
		"nginx_enabled": true, "nginx_port": int64(8080), "nginx_user": "www-data", "flag_yes": "yes", "flag_off": "off",
		"users": []any{"alice", "bob"}, "limits": map[string]any{"nofile": int64(1024)}, "empty": "", "version": "1.24.0",
		"conf_path": "/etc/redis/redis.conf",
	}
)

// scope resolves caseVars as vars.<name> and `result` as a register.
func testScope() Scope {
	return Scope{Var: func(name string) (string, Kind, bool) {
		if name == "result" {
			return "register.result", KindRegister, true
		}
		v, ok := caseVars[name]
		if !ok {
			return "", KindUnknown, false
		}
		return "vars." + name, kindOf(v), true
	}}
}

func kindOf(v any) Kind {
	switch v.(type) {
	case bool:
		return KindBool
	case string:
		return KindString
	case int64:
		return KindInt
	case []any:
		return KindList
	case map[string]any:
		return KindMap
	}
	return KindUnknown
}

// conditionCases: each Jinja condition with the value Ansible 2.14 gives
// it on the host above (checked with testdata/conditions.sh, which runs
// them through real Ansible), its CEL translation and whether that is
// exact.
var conditionCases = []struct {
	jinja string
	cel   string
	exact bool
	want  bool
}{
	{`ansible_os_family == "Debian"`, `soulprint.self.os.family == "debian"`, true, true},
	{`ansible_facts['os_family'] == 'RedHat'`, `soulprint.self.os.family == "redhat"`, true, false},
	{`ansible_facts.distribution in ['Debian', 'Ubuntu']`, `soulprint.self.os.distribution in ["debian", "ubuntu"]`, true, true},
	{`ansible_distribution_release != 'bullseye'`, `soulprint.self.os.codename != "bullseye"`, true, true},
	{`ansible_distribution_major_version | int >= 12`, `int_or(split(soulprint.self.os.version, ".")[0], 0) >= 12`, true, true},
	{`empty | int == 0 and ' 8 ' | int(3) == 8 and '8.9' | int == 8`, `((int_or(vars.empty, 0) == 0) && (int_or(" 8 ", 3) == 8)) && (int_or("8.9", 0) == 8)`, true, true},
	{`version is version('1.9', '>')`, `version_compare(vars.version, "1.9") > 0`, true, true},
	{`version is version('1.24', operator='le')`, `version_compare(vars.version, "1.24") <= 0`, true, false},
	{`version is version_compare('1.24.0', '==')`, `version_compare(vars.version, "1.24.0") == 0`, true, true},
	{`(result.stdout | regex_replace('^all (\w+)$', '\\1')) == 'ok'`, `regex_replace(register.result.stdout, "^all (\\w+)$", "\\1") == "ok"`, true, true},
	{`'a  b\tc'.split() | length == 3`, `size(split("a  b\tc")) == 3`, true, true},
	{`(limits.nproc | default(7)) == 7 and (limits.nofile | default(7)) == 1024`, `(((!(has(vars.limits) && type(vars.limits) == map && "nproc" in vars.limits)) ? 7 : vars.limits.nproc) == 7) && (((!(has(vars.limits) && type(vars.limits) == map && "nofile" in vars.limits)) ? 7 : vars.limits.nofile) == 1024)`, true, true},
	{`(empty | default('x', true)) == 'x'`, `((!has(vars.empty) || !(size(vars.empty) > 0)) ? "x" : vars.empty) == "x"`, true, true},
	{`ansible_architecture == 'x86_64'`, `soulprint.self.os.arch == "amd64"`, true, true},
	{`ansible_service_mgr == 'systemd' and nginx_enabled`, `(soulprint.self.init == "systemd") && vars.nginx_enabled`, true, true},
	{`not nginx_enabled or nginx_port > 1024`, `!vars.nginx_enabled || (vars.nginx_port > 1024)`, true, true},
	{`flag_yes | bool`, `lower(string(vars.flag_yes)) in ["1", "on", "t", "true", "y", "yes"]`, true, true},
	{`flag_off | bool`, `lower(string(vars.flag_off)) in ["1", "on", "t", "true", "y", "yes"]`, true, false},
	{`'alice' in users`, `"alice" in vars.users`, true, true},
	{`'carol' not in users`, `!("carol" in vars.users)`, true, true},
	{`users | length > 1`, `size(vars.users) > 1`, true, true},
	{`limits.nofile is defined`, `has(vars.limits.nofile)`, true, true},
	{`limits.nproc is undefined`, `!has(vars.limits.nproc)`, true, true},
	{`'nofile' in limits`, `contains(vars.limits, "nofile")`, true, true},
	{`nginx_user is match('www')`, `vars.nginx_user.matches("^(?:www)")`, true, true},
	{`nginx_user is search('data$')`, `vars.nginx_user.matches("data$")`, true, true},
	{`nginx_user.startswith('www')`, `vars.nginx_user.startsWith("www")`, true, true},
	{`version.split('.')[0] == '1'`, `split(vars.version, ".")[0] == "1"`, true, true},
	{`nginx_user ~ ':' ~ nginx_port == 'www-data:8080'`, `((vars.nginx_user + ":") + string(vars.nginx_port)) == "www-data:8080"`, true, true},
	{`empty`, `size(vars.empty) > 0`, true, false},
	{`result.rc == 0 and result is changed`, `(register.result.rc == 0) && register.result.changed`, true, true},
	{`result is failed`, `register.result.failed`, true, false},
	{`result is succeeded`, `!register.result.failed`, true, true},
	{`'ok' in result.stdout`, `contains(register.result.stdout, "ok")`, true, true},
	{`nginx_port % 2 == 0`, `(vars.nginx_port % 2) == 0`, true, true},
	{`nginx_port is even`, `vars.nginx_port % 2 == 0`, true, true},
	{`(nginx_port // 1000) == 8`, `(vars.nginx_port / 1000) == 8`, false, true},
	{`ansible_processor_vcpus > 1`, `soulprint.self.cpus > 1`, true, true},
	{`ansible_hostname == 'web-1'`, `soulprint.self.hostname == "web-1"`, false, true},
	{`conf_path | dirname == '/etc/redis'`, `(vars.conf_path.lastIndexOf("/") > 0 ? vars.conf_path.substring(0, vars.conf_path.lastIndexOf("/")) : (vars.conf_path.startsWith("/") ? "/" : "")) == "/etc/redis"`, true, true},
	{`conf_path | basename == 'redis.conf'`, `vars.conf_path.substring(vars.conf_path.lastIndexOf("/") + 1) == "redis.conf"`, true, true},
	{`ansible_os_family == 'Archlinux'`, `soulprint.self.os.family == "arch"`, true, false},
}

func TestTranslateConditionEvaluatesAsAnsible(t *testing.T) {
	env, err := expr.NewEnv(expr.KindDestiny)
	if err != nil {
		t.Fatal(err)
	}
	regs := expr.NewRegisters()
	regs.Set("result", "web-1", domain.Result{RC: 0, Changed: true, Stdout: "all ok"})
	act := &expr.Activation{Vars: caseVars, Registers: regs, CurrentSID: "web-1", Soulprint: expr.Soulprint{Self: hostSoulprint}}
	for _, c := range conditionCases {
		t.Run(c.jinja, func(t *testing.T) {
			got := TranslateCondition(c.jinja, testScope())
			if got.Manual != "" {
				t.Fatalf("manual: %s", got.Manual)
			}
			if got.CEL != c.cel {
				t.Errorf("CEL:\n got %s\nwant %s", got.CEL, c.cel)
			}
			if got.Exact() != c.exact {
				t.Errorf("exact = %v (lost %q), want %v", got.Exact(), got.Lost, c.exact)
			}
			p, err := env.CompileBool(got.CEL)
			if err != nil {
				t.Fatalf("the translation does not compile: %v", err)
			}
			v, err := p.EvalBool(context.Background(), act)
			if err != nil {
				t.Fatalf("evaluating %s: %v", got.CEL, err)
			}
			// An approximation may differ from Ansible (that is what its
			// Lost says); an exact translation never may.
			if c.exact && v != c.want {
				t.Errorf("%s = %v on the Debian host, Ansible says %v", got.CEL, v, c.want)
			}
		})
	}
}

// TestConditionCasesMatchAnsible keeps the table honest: the wanted values
// were made by real Ansible (testdata/conditions.sh writes
// testdata/conditions.json), and the table must say the same.
func TestConditionCasesMatchAnsible(t *testing.T) {
	b, err := os.ReadFile("testdata/conditions.json")
	if err != nil {
		t.Fatal(err)
	}
	var ansible map[string]bool
	if err := json.Unmarshal(b, &ansible); err != nil {
		t.Fatal(err)
	}
	for _, c := range conditionCases {
		got, ok := ansible[c.jinja]
		if !ok {
			t.Errorf("%s: not in testdata/conditions.json: run testdata/conditions.sh", c.jinja)
			continue
		}
		if got != c.want {
			t.Errorf("%s: the table says %v, Ansible says %v", c.jinja, c.want, got)
		}
	}
}

func TestTranslateManualAndValues(t *testing.T) {
	for _, c := range []struct {
		src, manual string
	}{
		{`groups['web'] | length > 0`, "groups reads the inventory"},
		{`ansible_selinux.status == 'enabled'`, "ansible_selinux.status has no soulprint equivalent"},
		{`x is version('1.2', '<')`, "x is not a variable"},
		{`nginx_version is version('1.2', '<')`, "nginx_version is not a variable"},
		{`version is version('1.2', '<', true)`, `strict and version_type have no CEL translation`},
		{`users | map('upper') | list`, "the filter map has no CEL translation"},
	} {
		got := TranslateCondition(c.src, testScope())
		if got.Manual == "" || !strings.Contains(got.Manual, c.manual) {
			t.Errorf("%s: manual = %q, want it to say %q", c.src, got.Manual, c.manual)
		}
	}
	for _, c := range []struct{ src, want string }{
		{`/etc/nginx/{{ nginx_user }}.conf`, `/etc/nginx/${ vars.nginx_user }.conf`},
		{`{{ nginx_port }}`, `${ vars.nginx_port }`},
		{`plain text`, `plain text`},
		{`{{ users | join(',') }}`, `${ join(vars.users, ",") }`},
		{`{{ item.name }}`, `${ item.name }`},
		{"{{ nginx_user }}\n", "${ vars.nginx_user }\n"},
	} {
		got := TranslateValue(c.src, testScope())
		if diff := cmp.Diff(Translation{CEL: c.want}, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.src, diff)
		}
	}
	if got := TranslateValue(`cost ${ price }`, testScope()); got.Manual == "" {
		t.Errorf("a value holding ${ must be manual, got %+v", got)
	}
	if got := TranslateValue(`{% if x %}a{% endif %}`, testScope()); got.Manual == "" {
		t.Errorf("a value with a statement must be manual, got %+v", got)
	}
}
