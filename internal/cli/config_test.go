package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/cli"
)

// TestSettingsPrecedence: flags over environment over the config file,
// field by field; the config file from --config, $SOULCTL_CONFIG or the
// XDG default.
func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "soulctl.yaml")
	if err := cli.SaveSettings(file, cli.Settings{Keeper: "http://file:1", Token: "file-token", Fingerprint: "ff"}); err != nil {
		t.Fatal(err)
	}
	xdg := filepath.Join(dir, "xdg")
	if err := cli.SaveSettings(filepath.Join(xdg, "soulctl", "config.yaml"), cli.Settings{Keeper: "http://xdg:1", Token: "xdg-token"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		flags cli.Globals
		env   map[string]string
		want  cli.Settings
	}{
		{"file only", cli.Globals{Config: file}, nil, cli.Settings{Keeper: "http://file:1", Token: "file-token", Fingerprint: "ff"}},
		{"env over file", cli.Globals{Config: file}, map[string]string{cli.EnvKeeper: "http://env:1"},
			cli.Settings{Keeper: "http://env:1", Token: "file-token", Fingerprint: "ff"}},
		{"flag over env", cli.Globals{Config: file, Keeper: "http://flag:1", Token: "flag-token"},
			map[string]string{cli.EnvKeeper: "http://env:1", cli.EnvToken: "env-token"},
			cli.Settings{Keeper: "http://flag:1", Token: "flag-token", Fingerprint: "ff"}},
		{"a CA file replaces the file's fingerprint", cli.Globals{Config: file, CAFile: "/ca.pem"}, nil,
			cli.Settings{Keeper: "http://file:1", Token: "file-token", CAFile: "/ca.pem"}},
		{"SOULCTL_CONFIG names the file", cli.Globals{}, map[string]string{cli.EnvConfig: file},
			cli.Settings{Keeper: "http://file:1", Token: "file-token", Fingerprint: "ff"}},
		{"XDG_CONFIG_HOME default", cli.Globals{}, map[string]string{"XDG_CONFIG_HOME": xdg},
			cli.Settings{Keeper: "http://xdg:1", Token: "xdg-token"}},
		{"~/.config default", cli.Globals{}, map[string]string{"HOME": dir},
			cli.Settings{}},
		{"--config over SOULCTL_CONFIG", cli.Globals{Config: filepath.Join(xdg, "soulctl", "config.yaml")}, map[string]string{cli.EnvConfig: file},
			cli.Settings{Keeper: "http://xdg:1", Token: "xdg-token"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.flags
			g.Getenv = func(k string) string { return tc.env[k] }
			got, err := g.Settings()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("settings (-want +got):\n%s", d)
			}
		})
	}

	// A config file with an unknown key is a usage error naming it.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("keeper: x\nkeepr: y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := cli.Globals{Config: bad, Getenv: func(string) string { return "" }}
	if _, err := g.Settings(); err == nil || !strings.Contains(err.Error(), "keepr") {
		t.Errorf("unknown key: %v", err)
	}
}

// TestLoginWritesConfig: login checks the token against a real Keeper and
// writes $XDG_CONFIG_HOME/soulctl/config.yaml (0600); later commands need
// no flags; a token can come from stdin; a bad token writes nothing.
func TestLoginWritesConfig(t *testing.T) {
	k := startKeeper(t)
	xdg := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": xdg, "HOME": t.TempDir()}
	path := filepath.Join(xdg, "soulctl", "config.yaml")

	if r := ctl(t, env, "", "login", "--keeper", k.URL, "--token", "not-a-jwt"); r.Code != 1 {
		t.Fatalf("login with a bad token: exit %d\n%s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a failed login wrote the config: %v", err)
	}

	r := ctl(t, env, k.Token+"\n", "login", "--keeper", k.URL).must(t)
	if !strings.Contains(r.Stdout, "logged in to "+k.URL+" as root (admin)") || !strings.Contains(r.Stdout, path) {
		t.Errorf("login output:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stderr, "Token: ") {
		t.Errorf("no prompt for the token on stderr: %q", r.Stderr)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", fi.Mode().Perm())
	}
	s, err := cli.LoadSettings(path)
	if err != nil || s.Keeper != k.URL || s.Token != k.Token {
		t.Fatalf("saved settings %+v, %v", s, err)
	}

	// -o json: who and where, never the token.
	j := ctl(t, env, k.Token+"\n", "login", "--keeper", k.URL, "-o", "json").must(t)
	var lv struct {
		Keeper, Name, Role, Config string
		TokenID                    string `json:"token_id"`
	}
	if err := json.Unmarshal([]byte(j.Stdout), &lv); err != nil || lv.Keeper != k.URL || lv.Name != "root" ||
		lv.Role != "admin" || lv.Config != path || lv.TokenID == "" || strings.Contains(j.Stdout, k.Token) {
		t.Errorf("login -o json: %+v, %v\n%s", lv, err, j.Stdout)
	}

	who := ctl(t, env, "", "whoami", "-o", "json").must(t)
	if !strings.Contains(who.Stdout, `"name": "root"`) {
		t.Errorf("whoami from the config file:\n%s", who.Stdout)
	}
	// The environment overrides the file: a wrong keeper fails.
	env[cli.EnvKeeper] = "http://127.0.0.1:1"
	if r := ctl(t, env, "", "whoami"); r.Code != 1 || !strings.Contains(r.Stderr, "127.0.0.1:1") {
		t.Errorf("SOULCTL_KEEPER did not override the file: exit %d\n%s", r.Code, r.Stderr)
	}
	// And a flag overrides the environment.
	ctl(t, env, "", "--keeper", k.URL, "whoami").must(t)
}
