package core

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAptSimulation(t *testing.T) {
	out := `NOTE: This is only a simulation!
Reading package lists...
Inst soultoy [1.0.0] (1.0.1 localhost [all])
Inst hello (2.10-3 lab [amd64])
Remv soultoy-lib [1.0]
Purg soultoy-old [0.9]
Conf soultoy (1.0.1 localhost [all])
Conf hello (2.10-3 lab [amd64])
`
	plan := parseAptSimulation(out)
	want := aptPlan{{"soultoy", "1.0.0", "1.0.1"}, {"hello", "", "2.10-3"}, {"soultoy-lib", "1.0", ""}, {"soultoy-old", "0.9", ""}}
	if diff := cmp.Diff(want, plan, cmp.AllowUnexported(aptChange{})); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	if got, want := plan.diff(), "~ soultoy 1.0.0 -> 1.0.1\n+ hello 2.10-3\n- soultoy-lib 1.0\n- soultoy-old 0.9\n"; got != want {
		t.Errorf("diff %q, want %q", got, want)
	}
	up, rm := plan.data()
	if diff := cmp.Diff(map[string]any{"soultoy": "1.0.1", "hello": "2.10-3"}, up); diff != "" {
		t.Errorf("upgraded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"soultoy-lib", "soultoy-old"}, rm); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if got := strings.Join(plan.names(), ","); got != "hello,soultoy,soultoy-lib,soultoy-old" {
		t.Errorf("names %q", got)
	}
	if len(parseAptSimulation("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n")) != 0 {
		t.Error("an empty simulation gave a plan")
	}
}

func TestAptFlagsArgs(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		f    aptFlags
		want []string
	}{
		{"defaults", aptFlags{}, []string{"-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"}},
		{"no dpkg options", aptFlags{dpkgOptions: []string{}}, nil},
		{"all", aptFlags{allowUnauthenticated: true, allowDowngrade: true, allowHeld: true, recommends: &yes, onlyUpgrade: true, noRemove: true, dpkgOptions: []string{"force-confnew"}},
			[]string{"-o", "Dpkg::Options::=--force-confnew", "--allow-unauthenticated", "--allow-downgrades", "--allow-change-held-packages", "-o", "APT::Install-Recommends=true", "--only-upgrade", "--no-remove"}},
		{"no recommends", aptFlags{recommends: &no, dpkgOptions: []string{}}, []string{"--no-install-recommends"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.f.args()); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadAptFlags(t *testing.T) {
	tests := []struct {
		name    string
		p       map[string]any
		want    []string // dpkg options
		set     string
		wantErr string
	}{
		{"default", map[string]any{}, []string{"force-confdef", "force-confold"}, "", ""},
		{"dashes trimmed", map[string]any{"dpkg_options": "--force-confnew, force-overwrite"}, []string{"force-confnew", "force-overwrite"}, "dpkg_options", ""},
		{"empty", map[string]any{"dpkg_options": ""}, []string{}, "dpkg_options", ""},
		{"injection", map[string]any{"dpkg_options": "force-confold; rm -rf /"}, nil, "", `param "dpkg_options"`},
		{"space", map[string]any{"dpkg_options": "force confold"}, nil, "", `param "dpkg_options"`},
		{"downgrade", map[string]any{"allow_downgrade": true}, []string{"force-confdef", "force-confold"}, "allow_downgrade", ""},
		{"recommends false", map[string]any{"install_recommends": false}, []string{"force-confdef", "force-confold"}, "install_recommends", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := readAptFlags(newArgs(tt.p))
			if tt.wantErr != "" {
				wantErrContains(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, f.dpkgOptions); diff != "" {
				t.Errorf("dpkg options (-want +got):\n%s", diff)
			}
			if got := f.set(); got != tt.set {
				t.Errorf("set() = %q, want %q", got, tt.set)
			}
		})
	}
}

func TestDebParamChecks(t *testing.T) {
	for _, tt := range []struct {
		v  string
		ok bool
	}{
		{"/srv/x.deb", true},
		{"https://example.com/x.deb", true},
		{"http://10.0.0.1:8080/x_1.0_all.deb", true},
		{"x.deb", false},
		{"/srv/../x.deb", false},
		{"https:///x.deb", false},
		{"ftp://example.com/x.deb", false},
	} {
		if err := checkDebSource(tt.v); (err == nil) != tt.ok {
			t.Errorf("checkDebSource(%q) = %v, want ok %v", tt.v, err, tt.ok)
		}
	}
	if err := checkSHA256(strings.Repeat("Ab", 32)); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"abc", strings.Repeat("g", 64)} {
		if checkSHA256(bad) == nil {
			t.Errorf("checkSHA256(%q) accepted", bad)
		}
	}
	for _, mode := range []string{"safe", "full", "dist", "yes", "no"} {
		if err := checkUpgradeMode(mode); err != nil {
			t.Error(err)
		}
	}
	if err := checkUpgradeMode("sometimes"); err == nil || !strings.Contains(err.Error(), "want safe, full, dist, yes or no") {
		t.Errorf("checkUpgradeMode(sometimes) = %v", err)
	}
}

// TestPkgAptOnlyParamsOnDNF: the apt-only switches are refused by name
// on the dnf side before anything runs (no RedHat host in the lab: what
// the dnf side does is otherwise untested).
func TestPkgAptOnlyParamsOnDNF(t *testing.T) {
	m := dnfManager{tool: "dnf"}
	yes := true
	for _, tt := range []struct {
		f    aptFlags
		want string
	}{
		{aptFlags{allowUnauthenticated: true}, "allow_unauthenticated"},
		{aptFlags{allowDowngrade: true}, "allow_downgrade"},
		{aptFlags{recommends: &yes}, "install_recommends"},
		{aptFlags{dpkgOptions: []string{"force-confnew"}}, "dpkg_options"},
	} {
		err := m.install(t.Context(), []pkgSpec{{name: "x"}}, installOpts{apt: tt.f})
		wantErrContains(t, err, `param "`+tt.want+`"`, "apt option")
		err = m.remove(t.Context(), []string{"x"}, removeOpts{apt: tt.f})
		wantErrContains(t, err, `param "`+tt.want+`"`, "apt option")
	}
	err := m.remove(t.Context(), []string{"x"}, removeOpts{autoremove: true})
	wantErrContains(t, err, `param "autoremove"`)
}
