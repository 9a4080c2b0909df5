package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

// iniApply runs core.file.ini on path: check mode reports the change (with
// a diff, the same action) and touches nothing; the run writes want; a
// second run is unchanged and touches nothing.
func iniApply(t *testing.T, path string, params map[string]any, want, wantAction string) {
	t.Helper()
	params["path"] = path
	var before snapshot
	_, statErr := os.Lstat(path)
	exists := statErr == nil
	if exists {
		before = snap(t, path)
	}
	res := run(t, "core.file.ini", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if res.Diff == "" {
		t.Errorf("check mode: no diff")
	}
	if res.Data["action"] != wantAction {
		t.Errorf("check mode: action %q, want %q", res.Data["action"], wantAction)
	}
	if exists {
		before.untouched(t, path)
	} else if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("check mode created %s", path)
	}
	res = run(t, "core.file.ini", params, nil)
	wantChanged(t, res, true)
	if res.Data["action"] != wantAction {
		t.Errorf("action %q, want %q", res.Data["action"], wantAction)
	}
	if got := readFile(t, path); got != want {
		t.Fatalf("content:\n%s\nwant:\n%s", got, want)
	}
	after := snap(t, path)
	res = run(t, "core.file.ini", params, nil)
	wantChanged(t, res, false)
	if res.Data["action"] != "OK" {
		t.Errorf("second run: action %q, want OK", res.Data["action"])
	}
	after.untouched(t, path)
}

// iniUnchanged asserts params leave the file at path as it is.
func iniUnchanged(t *testing.T, path string, params map[string]any) {
	t.Helper()
	params["path"] = path
	before := snap(t, path)
	for _, env := range []*module.Env{{Check: true}, nil} {
		res := run(t, "core.file.ini", params, env)
		wantChanged(t, res, false)
		if res.Data["action"] != "OK" {
			t.Errorf("action %q, want OK", res.Data["action"])
		}
	}
	before.untouched(t, path)
}

func TestFileIni(t *testing.T) {
	const mysql = "# MySQL settings\n[client]\nport = 3306\n\n[mysqld]\n# networking\nport = 3306\n;bind-address = 127.0.0.1\n\nmax_connections=100\n\n# end of mysqld\n[mysqldump]\nquick\n"
	for _, tc := range []struct {
		name, start string // start "-": no file
		params      map[string]any
		want        string
		action      string
	}{
		{"new file", "-", map[string]any{"section": "drinks", "option": "fav", "value": "lemonade"},
			"[drinks]\nfav = lemonade\n", "section and option added"},
		{"new file, no section", "-", map[string]any{"option": "beverage", "value": "coke"},
			"beverage = coke\n", "option added"},
		{"new option after the last setting, before trailing comments", mysql, map[string]any{"section": "mysqld", "option": "skip-name-resolve", "value": "1"},
			strings.Replace(mysql, "max_connections=100\n", "max_connections=100\nskip-name-resolve = 1\n", 1), "option added"},
		{"change a value in place, other spacing kept", mysql, map[string]any{"section": "mysqld", "option": "max_connections", "value": 500},
			strings.Replace(mysql, "max_connections=100", "max_connections = 500", 1), "option changed"},
		{"the option of another section is left alone", mysql, map[string]any{"section": "client", "option": "port", "value": "3307"},
			strings.Replace(mysql, "[client]\nport = 3306", "[client]\nport = 3307", 1), "option changed"},
		{"commented option reused", mysql, map[string]any{"section": "mysqld", "option": "bind-address", "value": "0.0.0.0"},
			strings.Replace(mysql, ";bind-address = 127.0.0.1", "bind-address = 0.0.0.0", 1), "option changed"},
		{"commented option kept with modify_inactive_option false", "[s]\n# foo = bar\nx = 1\n",
			map[string]any{"section": "s", "option": "foo", "value": "bar", "modify_inactive_option": false},
			"[s]\n# foo = bar\nx = 1\nfoo = bar\n", "option added"},
		{"only a comment after the header: inserted after the header", "[s]\n# Uncomment to enable foo\n# foo = bar\n",
			map[string]any{"section": "s", "option": "foo", "value": "bar", "modify_inactive_option": false},
			"[s]\nfoo = bar\n# Uncomment to enable foo\n# foo = bar\n", "option added"},
		{"doc comment naming the option stays", "[PHP]\n; output_buffering\n; Default Value: Off\n;output_buffering = 4096\n",
			map[string]any{"section": "PHP", "option": "output_buffering", "value": "123"},
			"[PHP]\n; output_buffering\n; Default Value: Off\noutput_buffering = 123\n", "option changed"},
		{"new section at the end", mysql, map[string]any{"section": "mysqld_safe", "option": "log-error", "value": "/var/log/mysql.err"},
			mysql + "[mysqld_safe]\nlog-error = /var/log/mysql.err\n", "section and option added"},
		// Comments at the top are not settings, so the new line goes above
		// them, as in Ansible.
		{"option before the first section", mysql, map[string]any{"option": "include", "value": "/etc/my.d"},
			"include = /etc/my.d\n" + mysql, "option added"},
		{"option before the first section, after the settings there", "a = 1\n# about b\n[s]\n", map[string]any{"option": "b", "value": "2"},
			"a = 1\nb = 2\n# about b\n[s]\n", "option added"},
		{"option without section in a file without sections", "a = 1\n\n# b\nb = 2\n", map[string]any{"section": nil, "option": "a", "value": "3"},
			"a = 3\n\n# b\nb = 2\n", "option changed"},
		{"no_extra_spaces", "[s]\n", map[string]any{"section": "s", "option": "k", "value": "v", "no_extra_spaces": true},
			"[s]\nk=v\n", "option added"},
		{"spaces around = are rewritten without ignore_spaces", "[s]\nk=v\n", map[string]any{"section": "s", "option": "k", "value": "v"},
			"[s]\nk = v\n", "option changed"},
		{"ignore_spaces still changes the value", "[s]\nk=v\n", map[string]any{"section": "s", "option": "k", "value": "w", "ignore_spaces": true},
			"[s]\nk = w\n", "option changed"},
		{"section header with spaces", "[ foo ]\n; bar=baz\n", map[string]any{"section": "foo", "option": "bar", "value": "frelt"},
			"[ foo ]\nbar = frelt\n", "option changed"},
		{"values: repeated option", "[drinks]\nfav = a\n", map[string]any{"section": "drinks", "option": "fav", "values": []any{"a", "b", "c"}},
			"[drinks]\nfav = a\nfav = b\nfav = c\n", "option added"},
		{"values exclusive: kept, reused, removed", "[drinks]\nfav = a\nx = 1\nfav = b\nfav = c\n", map[string]any{"section": "drinks", "option": "fav", "values": []any{"b", "d", "d"}},
			"[drinks]\nfav = d\nx = 1\nfav = b\n", "option changed"},
		{"values not exclusive: added to the others", "[drinks]\nfav = a\nfav = b\n", map[string]any{"section": "drinks", "option": "fav", "values": []any{"b", "c"}, "exclusive": false},
			"[drinks]\nfav = a\nfav = b\nfav = c\n", "option added"},
		{"value exclusive replaces every occurrence", "[drinks]\nfav = a\nfav = b\n", map[string]any{"section": "drinks", "option": "fav", "value": "b"},
			"[drinks]\nfav = b\n", "option changed"},
		{"absent option, every occurrence", "[drinks]\nfav = a\n# fav = b\nbev = c\nfav = d\n", map[string]any{"section": "drinks", "option": "fav", "state": "absent"},
			"[drinks]\n# fav = b\nbev = c\n", "option changed"},
		{"absent values, not exclusive", "[drinks]\nfav = a\nfav = b\nfav = c\n", map[string]any{"section": "drinks", "option": "fav", "values": []any{"a", "c"}, "state": "absent", "exclusive": false},
			"[drinks]\nfav = b\n", "option changed"},
		{"absent section", mysql, map[string]any{"section": "mysqld", "state": "absent"},
			"# MySQL settings\n[client]\nport = 3306\n\n[mysqldump]\nquick\n", "section removed"},
		{"absent last section leaves an empty file", "[drinks]\nfav = a\n", map[string]any{"section": "drinks", "state": "absent"},
			"", "section removed"},
		{"allow_no_value adds a bare option", mysql, map[string]any{"section": "mysqldump", "option": "single-transaction", "allow_no_value": true},
			mysql + "single-transaction\n", "option added"},
		{"allow_no_value turns a value into a bare option", "[mysqld]\nskip-name = x\n", map[string]any{"section": "mysqld", "option": "skip-name", "allow_no_value": true},
			"[mysqld]\nskip-name\n", "option changed"},
		{"a bare option gets a value", "[mysqld]\nskip-name\nport = 1\n", map[string]any{"section": "mysqld", "option": "skip-name", "value": "on"},
			"[mysqld]\nskip-name = on\nport = 1\n", "option changed"},
		{"empty section with allow_no_value", "[a]\n", map[string]any{"section": "b", "allow_no_value": true},
			"[a]\n[b]\n", "only section added"},
		{"empty value", "[s]\n", map[string]any{"section": "s", "option": "k", "value": ""},
			"[s]\nk = \n", "option added"},
		{"missing final newline is added", "[s]\nk = v", map[string]any{"section": "s", "option": "k", "value": "v"},
			"[s]\nk = v\n", "OK"},
		{"byte order mark dropped on edit", "\ufeff[s]\na=1\n", map[string]any{"section": "s", "option": "b", "value": "0"},
			"[s]\na=1\nb = 0\n", "option added"},
		{"CRLF line ends kept", "[s]\r\na = 1\r\n", map[string]any{"section": "s", "option": "b", "value": "2"},
			"[s]\r\na = 1\r\nb = 2\r\n", "option added"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "my.cnf")
			if tc.start != "-" {
				writeTestFile(t, p, tc.start)
			}
			iniApply(t, p, tc.params, tc.want, tc.action)
		})
	}
}

func TestFileIniUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		params        map[string]any
	}{
		{"value already set", "[s]\nk = v\n", map[string]any{"section": "s", "option": "k", "value": "v"}},
		{"ignore_spaces: only spaces differ", "[s]\nk=v\n", map[string]any{"section": "s", "option": "k", "value": "v", "ignore_spaces": true}},
		{"ignore_spaces with no_extra_spaces", "[s]\nk = v\n", map[string]any{"section": "s", "option": "k", "value": "v", "ignore_spaces": true, "no_extra_spaces": true}},
		{"values in another order", "[s]\nk = a\nk = b\n", map[string]any{"section": "s", "option": "k", "values": []any{"b", "a"}}},
		{"not exclusive, value among others", "[s]\nk = a\nk = b\n", map[string]any{"section": "s", "option": "k", "value": "b", "exclusive": false}},
		{"absent option not there", "[s]\nk = a\n", map[string]any{"section": "s", "option": "x", "state": "absent"}},
		{"absent value not there, not exclusive", "[s]\nk = a\n", map[string]any{"section": "s", "option": "k", "value": "b", "state": "absent", "exclusive": false}},
		{"absent section not there", "[s]\nk = a\n", map[string]any{"section": "t", "state": "absent"}},
		{"absent does not touch a commented option", "[s]\n# k = a\n", map[string]any{"section": "s", "option": "k", "state": "absent"}},
		{"bare option present", "[s]\nskip\n", map[string]any{"section": "s", "option": "skip", "allow_no_value": true}},
		{"byte order mark kept when nothing changes", "\ufeff[s]\nk = v\n", map[string]any{"section": "s", "option": "k", "value": "v"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f.ini")
			writeTestFile(t, p, tc.content)
			iniUnchanged(t, p, tc.params)
			if got := readFile(t, p); got != tc.content {
				t.Errorf("content %q, want %q", got, tc.content)
			}
		})
	}
}

// section_has_values picks one of several sections of the same name, as
// in a WireGuard configuration with one [Peer] per peer.
func TestFileIniSectionHasValues(t *testing.T) {
	const wg = "[Interface]\nPrivateKey = p\n\n[Peer]\nAllowedIPs = 10.4.0.11/32\nPublicKey = k1\n\n[Peer]\nAllowedIPs = 10.4.0.12/32\nPublicKey = k2\n"
	peer := func(ip string) []any { return []any{map[string]any{"option": "AllowedIPs", "value": ip}} }
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
		action string
	}{
		{"update the key of the second peer", map[string]any{"section": "Peer", "section_has_values": peer("10.4.0.12/32"), "option": "PublicKey", "value": "k9"},
			strings.Replace(wg, "k2", "k9", 1), "option changed"},
		{"remove the first peer", map[string]any{"section": "Peer", "section_has_values": peer("10.4.0.11/32"), "state": "absent"},
			"[Interface]\nPrivateKey = p\n\n[Peer]\nAllowedIPs = 10.4.0.12/32\nPublicKey = k2\n", "section removed"},
		{"a new peer gets its condition options", map[string]any{"section": "Peer", "section_has_values": peer("10.4.0.13/32"), "option": "PublicKey", "value": "k3"},
			wg + "[Peer]\nAllowedIPs = 10.4.0.13/32\nPublicKey = k3\n", "section and option added"},
		{"values list in a condition", map[string]any{"section": "Peer", "option": "PublicKey", "value": "k8",
			"section_has_values": []any{map[string]any{"option": "AllowedIPs", "values": []any{"10.0.0.1/32", "10.4.0.11/32"}}}},
			strings.Replace(wg, "k1", "k8", 1), "option changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "wg0.conf")
			writeTestFile(t, p, wg)
			iniApply(t, p, tc.params, tc.want, tc.action)
		})
	}
}

func TestFileIniFileParams(t *testing.T) {
	dir := t.TempDir()
	// create: a missing parent directory is made, mode applies.
	p := filepath.Join(dir, "conf.d", "app.ini")
	iniApply(t, p, map[string]any{"section": "main", "option": "debug", "value": "false", "mode": "0600"}, "[main]\ndebug = false\n", "section and option added")
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat %s: %v %v", p, fi, err)
	}
	// A mode change alone is a change, with the same content.
	res := run(t, "core.file.ini", map[string]any{"path": p, "section": "main", "option": "debug", "value": "false", "mode": "0640"}, nil)
	wantChanged(t, res, true)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}

	// create: false makes a missing file an error, for both states.
	missing := filepath.Join(dir, "missing.ini")
	for _, state := range []string{"present", "absent"} {
		_, err := runErr(t, "core.file.ini", map[string]any{"path": missing, "section": "s", "option": "k", "value": "v", "state": state, "create": false}, nil)
		wantErrContains(t, err, missing, "does not exist", "create: true")
	}
	// state: absent on a missing file is converged and creates nothing.
	wantChanged(t, run(t, "core.file.ini", map[string]any{"path": missing, "section": "s", "state": "absent"}, nil), false)
	if _, err := os.Lstat(missing); !os.IsNotExist(err) {
		t.Fatalf("absent created %s", missing)
	}

	// A symlink is refused unless follow: true, which edits its target.
	target := filepath.Join(dir, "real.ini")
	link := filepath.Join(dir, "link.ini")
	writeTestFile(t, target, "[main]\nfoo=BAR\n")
	if err := os.Symlink("real.ini", link); err != nil {
		t.Fatal(err)
	}
	proxy := map[string]any{"path": link, "section": "main", "option": "proxy", "value": "http://proxy:3128"}
	_, err := runErr(t, "core.file.ini", proxy, nil)
	wantErrContains(t, err, "symlink", "follow: true")
	proxy["follow"] = true
	wantChanged(t, run(t, "core.file.ini", proxy, nil), true)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("follow replaced the link: %v %v", fi, err)
	}
	if got := readFile(t, target); got != "[main]\nfoo=BAR\nproxy = http://proxy:3128\n" {
		t.Fatalf("target content %q", got)
	}

	// validate sees the new content; a refusal leaves the file alone.
	before := snap(t, target)
	res = run(t, "core.file.ini", map[string]any{"path": target, "section": "main", "option": "foo", "value": "bad", "validate": "! grep -q bad %s"}, nil)
	if !res.Failed {
		t.Fatalf("validate refused nothing: %+v", res)
	}
	before.untouched(t, target)
}

func TestFileIniBadInput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.ini")
	writeTestFile(t, p, "[s]\nk = v\n")
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"value and values", map[string]any{"section": "s", "option": "k", "value": "a", "values": []any{"b"}}, []string{`"value" and "values"`, "mutually exclusive"}},
		{"present without value", map[string]any{"section": "s", "option": "k"}, []string{`"value"`, "allow_no_value"}},
		{"present with value null", map[string]any{"section": "s", "option": "k", "value": nil}, []string{`"value"`, "allow_no_value"}},
		{"present with empty values", map[string]any{"section": "s", "option": "k", "values": []any{}}, []string{`"value"`, "allow_no_value"}},
		{"neither section nor option", map[string]any{"value": "v"}, []string{"section", "option"}},
		{"value without option", map[string]any{"section": "s", "value": "v"}, []string{"needs \"option\""}},
		{"bad state", map[string]any{"section": "s", "option": "k", "value": "v", "state": "gone"}, []string{`"state"`, "present or absent"}},
		{"values item not scalar", map[string]any{"section": "s", "option": "k", "values": []any{map[string]any{"a": 1}}}, []string{`"values"`, "item 0"}},
		{"values not a list", map[string]any{"section": "s", "option": "k", "values": "a"}, []string{`"values"`}},
		{"section_has_values without section", map[string]any{"option": "k", "value": "v", "section_has_values": []any{map[string]any{"option": "x"}}}, []string{"section_has_values", "give section"}},
		{"section_has_values item without option", map[string]any{"section": "s", "option": "k", "value": "v", "section_has_values": []any{map[string]any{"value": "x"}}}, []string{"section_has_values", "item 0", "option"}},
		{"section_has_values unknown key", map[string]any{"section": "s", "option": "k", "value": "v", "section_has_values": []any{map[string]any{"option": "x", "val": "y"}}}, []string{"section_has_values", `"val"`}},
		{"section_has_values value and values", map[string]any{"section": "s", "option": "k", "value": "v", "section_has_values": []any{map[string]any{"option": "x", "value": "y", "values": []any{"z"}}}}, []string{"section_has_values", "mutually exclusive"}},
		{"unknown param", map[string]any{"section": "s", "option": "k", "value": "v", "dest": "/x"}, []string{`unknown param "dest"`}},
		{"relative path", map[string]any{"path": "etc/f.ini", "section": "s", "option": "k", "value": "v"}, []string{"must be absolute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.params["path"]; !ok {
				tc.params["path"] = p
			}
			before := snap(t, p)
			_, err := runErr(t, "core.file.ini", tc.params, nil)
			wantErrContains(t, err, tc.want...)
			before.untouched(t, p)
		})
	}
	// The state check runs at load time too (scenario validate).
	m, _ := module.Lookup("core.file.ini")
	if err := m.Schema().Params["state"].Check("gone"); err == nil {
		t.Errorf("state check accepted %q", "gone")
	}
	if err := m.Schema().Params["state"].Check("absent"); err != nil {
		t.Errorf("state check refused absent: %v", err)
	}
}
