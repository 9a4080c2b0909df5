package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/soulstack/soulstack/internal/config"
)

func TestLoadFileEnvFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keeper.yaml")
	err := os.WriteFile(path, []byte("data_dir: /from/file\nlisten: \":9000\"\nlog_format: json\ntask_timeout: 2m\ntls:\n  hosts: [keeper.example.com]\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvDatabaseURL, "postgres://env/db")
	k, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fl := config.BindFlags(fs, "data-dir", "listen", "database-url", "task-timeout", "fan-out")
	if err := fs.Parse([]string{"--listen", "127.0.0.1:7000", "--fan-out=5"}); err != nil {
		t.Fatal(err)
	}
	fl.Apply(&k)

	want := config.Default()
	want.DataDir = "/from/file"    // file
	want.Listen = "127.0.0.1:7000" // flag over file
	want.LogFormat = "json"        // file
	want.TaskTimeout = config.Duration(2 * time.Minute)
	want.TLS.Hosts = []string{"keeper.example.com"}
	want.DatabaseURL = "postgres://env/db" // env; the flag was not given
	want.FanOut = 5
	if diff := cmp.Diff(want, k); diff != "" {
		t.Fatalf("config (-want +got):\n%s", diff)
	}
	if err := k.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRejectsUnknownKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keeper.yaml")
	if err := os.WriteFile(path, []byte("data_dir: x\nlisten_addr: \":1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err == nil || !strings.Contains(err.Error(), "listen_addr") {
		t.Fatalf("Load: %v, want an error naming listen_addr", err)
	}
}

func TestValidate(t *testing.T) {
	k := config.Default()
	k.Listen = "nonsense"
	k.DatabaseURL = "mysql://x"
	k.LogFormat = "xml"
	k.TLS.Cert = "c.pem"
	err := k.Validate()
	if err == nil {
		t.Fatal("Validate passed a broken config")
	}
	for _, want := range []string{"--data-dir", "listen", "postgres://", "log_format", "tls cert and key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error does not mention %q:\n%v", want, err)
		}
	}
}

// TestHTTPAllowIsValidated: a bad http.allow entry (M2's destination
// policy) stops the Keeper at start with the entry named.
func TestHTTPAllowIsValidated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keeper.yaml")
	if err := os.WriteFile(path, []byte("data_dir: /d\nhttp:\n  allow: [public, 10.0.0.0/8, inventory.internal, \"*.corp.example\", \"10.0.0.0/99\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.HTTP.Allow) != 5 {
		t.Fatalf("allow = %v", k.HTTP.Allow)
	}
	if err := k.Validate(); err == nil || !strings.Contains(err.Error(), `http.allow[4] "10.0.0.0/99"`) {
		t.Fatalf("Validate = %v", err)
	}
	k.HTTP.Allow = k.HTTP.Allow[:4]
	if err := k.Validate(); err != nil {
		t.Fatalf("Validate = %v", err)
	}
}
