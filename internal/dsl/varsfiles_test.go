package dsl

import (
	"strings"
	"testing"
	"testing/fstest"
)

func varsRepo(main string, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"service.yml":              {Data: []byte("name: s\n")},
		"scenario/create/main.yml": {Data: []byte(main)},
	}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return fsys
}

func TestVarsFilesLoad(t *testing.T) {
	svc, problems := LoadFS(varsRepo(`vars_files:
  - ["vars/${ soulprint.self.os.distribution }.yml", vars/default.yml]
  - common.yml
tasks:
  - module: core.test.echo
    params: {message: "${ vars.motd + string(vars.port) }"}
`, map[string]string{
		"scenario/create/vars/debian.yml":  "motd: deb\nport: 1\n",
		"scenario/create/vars/default.yml": "motd: other\nport: 2\n",
		"scenario/create/common.yml":       "x: [1, 2]\n",
	}))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	vf := svc.Scenarios["create"].VarsFiles
	if len(vf) != 2 || len(vf[0].Alternatives) != 2 || len(vf[0].Data) != 2 || vf[0].Data["vars/debian.yml"]["port"] != 1 ||
		vf[1].Data["common.yml"] == nil || vf[0].Pos.String() != "scenario/create/main.yml:2:5" {
		t.Fatalf("vars_files = %+v", vf)
	}
}

func TestVarsFilesProblems(t *testing.T) {
	files := map[string]string{
		"scenario/create/vars/debian.yml":  "port: 1\n",
		"scenario/create/vars/default.yml": "port: 2\n",
	}
	cases := []struct{ name, main, want string }{
		{"literal missing", "vars_files: [vars/defualt.yml]\ntasks: []\n",
			"scenario/create/main.yml:1:14: vars_files[0]: vars/defualt.yml does not exist in scenario/create (did you mean vars/default.yml?)"},
		{"nothing matches", "vars_files: [[\"os/${ soulprint.self.os.family }.yml\"]]\ntasks: []\n",
			"scenario/create/main.yml:1:14: vars_files[0]: no file in scenario/create matches any of os/${ soulprint.self.os.family }.yml"},
		{"escapes", "vars_files: [../../../vars.yml]\ntasks: []\n",
			"vars_files[0]: \"../../../vars.yml\" must be a clean path relative to scenario/create that stays in the repository"},
		{"outside the unit, missing", "vars_files: [../../vars/nope.yml]\ntasks: []\n",
			"vars_files[0]: ../../vars/nope.yml does not exist"},
		{"not a list", "vars_files: vars/debian.yml\ntasks: []\n", "vars_files must be a list"},
		{"not a path", "vars_files: [{a: b}]\ntasks: []\n", "vars_files[0] must be a path or a non-empty list"},
		{"bad expression", "vars_files: [\"vars/${ soulprint.self.os.distribution + 1 }.yml\"]\ntasks: []\n", "vars_files[0]"},
		{"typed from the files", "vars_files: [[\"vars/${ soulprint.self.os.distribution }.yml\", vars/default.yml]]\ntasks:\n  - module: core.file.absent\n    params: {path: \"${ vars.port }\"}\n",
			"param path of core.file.absent must be a string, but ${ vars.port } is int"},
		{"task level", "tasks:\n  - module: core.test.echo\n    vars_files: [vars/nope.yml]\n",
			"scenario/create/main.yml:3:18: vars_files[0]: vars/nope.yml does not exist"},
		{"unknown key still caught", "vars_file: [vars/debian.yml]\ntasks: []\n", "unknown key vars_file in scenario main.yml (did you mean vars_files?)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, problems := LoadFS(varsRepo(c.main, files))
			if !strings.Contains(problems.Error(), c.want) {
				t.Fatalf("problems:\n%s\nwant %q", problems.Error(), c.want)
			}
		})
	}
	// A key whose type differs between the files an entry can pick is
	// dyn: no error.
	files["scenario/create/vars/mixed.yml"] = "port: two\n"
	_, problems := LoadFS(varsRepo("vars_files: [[\"vars/${ soulprint.self.os.distribution }.yml\", vars/mixed.yml]]\ntasks:\n  - module: core.file.absent\n    params: {path: \"${ vars.port }\"}\n", files))
	if len(problems) > 0 {
		t.Fatalf("mixed types: %v", problems)
	}
}

func TestVarsFileData(t *testing.T) {
	cases := []struct{ file, want string }{
		{"greeting: \"${ input.x }\"\n", "scenario/create/vars/a.yml:1:11: greeting: input.x is not declared in input: of scenario create"},
		{"a: \"${ vars.b + 1 }\"\nb: x\n", "scenario/create/vars/a.yml:1:15: a: operator + cannot take (string, int)"},
		{"- a\n- b\n", "scenario/create/vars/a.yml:1:1:"},
		{"bad-name: 1\n", "vars name \"bad-name\" must be an identifier"},
		{"a: [\n", "scenario/create/vars/a.yml:1:1: invalid YAML"},
	}
	for _, c := range cases {
		_, problems := LoadFS(varsRepo("vars_files: [vars/a.yml]\ntasks: []\n", map[string]string{"scenario/create/vars/a.yml": c.file}))
		if !strings.Contains(problems.Error(), c.want) {
			t.Errorf("%q: problems:\n%s\nwant %q", c.file, problems.Error(), c.want)
		}
	}
}
