package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/cli"
)

// TestCloudCommands registers an exec provider (credentials from an env
// file) and a local one with profiles on a real Keeper, lists and shows
// them, refuses a profile of an unknown provider with exit code 2 (validation) and a
// clear message, and deletes them.
func TestCloudCommands(t *testing.T) {
	k := startKeeper(t)
	dir := t.TempDir()
	envFile := filepath.Join(dir, "hc.env")
	if err := os.WriteFile(envFile, []byte("# platform token\nHCLOUD_TOKEN=tok-Value-4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set := k.ctl(t, "cloud", "provider", "set", "hetzner", "--kind", "exec", "--executable", "/usr/local/bin/hc-prov",
		"--arg", "--region=fsn1", "--env-file", envFile, "--timeout", "5m").must(t)
	if !strings.Contains(set.Stdout, "cloud provider hetzner (exec) set") {
		t.Fatalf("provider set: %+v", set)
	}
	k.ctl(t, "cloud", "provider", "set", "lab", "--kind", "local").must(t)
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte("type: cx22\nimage: debian-12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k.ctl(t, "cloud", "profile", "set", "small", "--provider", "hetzner", "--spec-file", spec, "--spec", "location=fsn1", "--covens", "web,de").must(t)
	k.ctl(t, "cloud", "profile", "set", "labhost", "--provider", "lab", "--rootfs", "/srv/rootfs").must(t)
	bad := k.ctl(t, "cloud", "profile", "set", "x", "--provider", "nope")
	if bad.Code != 2 || !strings.Contains(bad.Stderr, "not registered") {
		t.Fatalf("profile of an unknown provider: %+v", bad)
	}
	usage := k.ctl(t, "cloud", "provider", "set", "y")
	if usage.Code != 2 || !strings.Contains(usage.Stderr, "--kind") {
		t.Fatalf("provider set without --kind: %+v", usage)
	}
	ls := k.ctl(t, "cloud", "provider", "list").must(t)
	if !strings.Contains(ls.Stdout, "hetzner") || !strings.Contains(ls.Stdout, "local") {
		t.Fatalf("provider list:\n%s", ls.Stdout)
	}
	show := k.ctl(t, "-o", "json", "cloud", "provider", "show", "hetzner").must(t)
	if strings.Contains(show.Stdout, "tok-Value-4242") || !strings.Contains(show.Stdout, `"HCLOUD_TOKEN": "****"`) || !strings.Contains(show.Stdout, "--region=fsn1") {
		t.Fatalf("provider show (the env is masked, for admins too):\n%s", show.Stdout)
	}
	pl := k.ctl(t, "cloud", "profile", "list").must(t)
	if !strings.Contains(pl.Stdout, "small") || !strings.Contains(pl.Stdout, "de,web") || !strings.Contains(pl.Stdout, "location=fsn1") || !strings.Contains(pl.Stdout, "type=cx22") {
		t.Fatalf("profile list:\n%s", pl.Stdout)
	}
	ps := k.ctl(t, "cloud", "profile", "show", "labhost").must(t)
	if !strings.Contains(ps.Stdout, "rootfs: /srv/rootfs") {
		t.Fatalf("profile show:\n%s", ps.Stdout)
	}
	k.ctl(t, "cloud", "instance", "list").must(t)
	if inUse := k.ctl(t, "cloud", "provider", "delete", "lab"); inUse.Code != 1 || !strings.Contains(inUse.Stderr, "in use") {
		t.Fatalf("deleting a provider in use: %+v", inUse)
	}
	k.ctl(t, "cloud", "profile", "delete", "labhost").must(t)
	k.ctl(t, "cloud", "provider", "delete", "lab").must(t)
	if again := k.ctl(t, "cloud", "provider", "show", "lab"); again.Code != 1 {
		t.Fatalf("show of a deleted provider: %+v", again)
	}
}

// TestCloudChangesNotInProcedures: a Checker procedure may list and show
// providers but not register, change or delete them — which programs the
// Keeper runs is an admin's decision at the API.
func TestCloudChangesNotInProcedures(t *testing.T) {
	k := startKeeper(t)
	c := k.client(t)
	k.ctl(t, "cloud", "provider", "set", "lab", "--kind", "local").must(t)
	for _, argv := range [][]string{
		{"cloud", "provider", "set", "x", "--kind", "exec", "--executable", "/bin/sh"},
		{"cloud", "provider", "delete", "lab"},
		{"cloud", "profile", "set", "p", "--provider", "lab", "--rootfs", "/r"},
	} {
		if _, err := cli.Exec(context.Background(), c, argv); err == nil || !strings.Contains(err.Error(), "not available in procedures") {
			t.Errorf("%q in Exec: %v, want refused", argv, err)
		}
	}
	if _, err := cli.Exec(context.Background(), c, []string{"cloud", "provider", "list"}); err != nil {
		t.Errorf("provider list in Exec: %v", err)
	}
}
