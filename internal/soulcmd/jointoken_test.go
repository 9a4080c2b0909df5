package soulcmd

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestI9JoinTokenOffTheCommandLine is audit note I9: `soul run
// --join-token SSJ1…` puts the secret in the process list. The token is
// read from --join-token-file or $SOUL_JOIN_TOKEN without a word, and an
// argument still works but is warned about.
func TestI9JoinTokenOffTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("SSJ1-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose")
	if err := os.WriteFile(loose, []byte("SSJ1-loose"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env string
		flags     connFlags
		token     string
		warn      string // "" = no warning
		err       string
	}{
		{name: "file", flags: connFlags{joinTokenFile: file}, token: "SSJ1-from-file"},
		{name: "env", env: "SSJ1-from-env", token: "SSJ1-from-env"},
		{name: "argument", flags: connFlags{joinToken: "SSJ1-arg"}, token: "SSJ1-arg", warn: "visible to every local user"},
		{name: "file readable by others", flags: connFlags{joinTokenFile: loose}, token: "SSJ1-loose", warn: "make it 0600"},
		{name: "empty file", flags: connFlags{joinTokenFile: empty}, err: "is empty"},
		{name: "missing file", flags: connFlags{joinTokenFile: filepath.Join(dir, "nope")}, err: "--join-token-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(joinTokenEnv, tc.env)
			var logs bytes.Buffer
			cfg, err := tc.flags.config(slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || cfg.JoinToken != tc.token {
				t.Fatalf("token %q err %v, want %q", cfg.JoinToken, err, tc.token)
			}
			if got := logs.String(); (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
				t.Fatalf("logs %q, want warning %q", got, tc.warn)
			}
		})
	}
}
