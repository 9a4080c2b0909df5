package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretCommands sets a secret from stdin and from a file on a real
// Keeper, lists it, and deletes it; the value shows in no output and the
// keeper's key file is 0600 beside the signing key.
func TestSecretCommands(t *testing.T) {
	k := startKeeper(t)
	const val = "Cli-S3cret-Value-77"
	base := []string{"--keeper", k.URL, "--token", k.Token}
	r := ctl(t, nil, val+"\n", append(base, "secret", "set", "db_password")...).must(t)
	f := filepath.Join(t.TempDir(), "v")
	if err := os.WriteFile(f, []byte(val+"-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	r2 := ctl(t, nil, "", append(base, "secret", "set", "api_key", "--from-file", f)...).must(t)
	empty := ctl(t, nil, "", append(base, "secret", "set", "nothing")...)
	if empty.Code != 2 || !strings.Contains(empty.Stderr, "empty") {
		t.Fatalf("an empty value: %+v", empty)
	}
	ls := k.ctl(t, "secret", "list").must(t)
	js := k.ctl(t, "-o", "json", "secret", "list").must(t)
	if !strings.Contains(ls.Stdout, "db_password") || !strings.Contains(ls.Stdout, "api_key") || !strings.Contains(ls.Stdout, "root") {
		t.Fatalf("secret list:\n%s", ls.Stdout)
	}
	for _, out := range []string{r.Stdout, r.Stderr, r2.Stdout, ls.Stdout, js.Stdout} {
		if strings.Contains(out, val) {
			t.Fatalf("an output holds the value:\n%s", out)
		}
	}
	if got, err := k.K.Secrets().Value(t.Context(), "db_password"); err != nil || got != val {
		t.Fatalf("stored value %q, %v (stdin's trailing newline dropped)", got, err)
	}
	if got, err := k.K.Secrets().Value(t.Context(), "api_key"); err != nil || got != val+"-file" {
		t.Fatalf("stored value %q, %v", got, err)
	}
	fi, err := os.Stat(filepath.Join(k.Dir, "keeper", "secrets.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets.key: %v %v", fi, err)
	}
	k.ctl(t, "secret", "delete", "db_password").must(t)
	if again := k.ctl(t, "secret", "delete", "db_password"); again.Code == 0 {
		t.Fatal("deleting twice succeeded")
	}
}
