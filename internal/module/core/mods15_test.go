package core

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

func TestCronPresent(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/cron.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := &module.Env{Root: root}
	p := map[string]any{"name": "backup", "schedule": "*/15 2 * * 1-5", "job": "/usr/local/bin/backup --quiet", "env": map[string]any{"MAILTO": "ops"}}
	file := filepath.Join(root, "etc/cron.d/backup")

	r := run(t, "core.cron.present", p, &module.Env{Root: root, Check: true})
	wantChanged(t, r, true)
	if _, err := os.Stat(file); !os.IsNotExist(err) || !strings.Contains(r.Diff, "+*/15 2 * * 1-5 root /usr/local/bin/backup --quiet") {
		t.Fatalf("check mode wrote or diff wrong: %v\n%s", err, r.Diff)
	}
	wantChanged(t, run(t, "core.cron.present", p, env), true)
	got, _ := os.ReadFile(file)
	if !strings.HasSuffix(string(got), "MAILTO=ops\n*/15 2 * * 1-5 root /usr/local/bin/backup --quiet\n") {
		t.Fatalf("cron file:\n%s", got)
	}
	s := snap(t, file)
	wantChanged(t, run(t, "core.cron.present", p, env), false)
	s.untouched(t, file)

	for _, bad := range []string{"* * * *", "61 * * * *", "@every 5m", "* * * * * *", "x y z a b"} {
		_, err := runErr(t, "core.cron.present", map[string]any{"name": "b", "schedule": bad, "job": "true"}, env)
		wantErrContains(t, err, "core.cron.present on ", `param "schedule"`)
	}
	_, err := runErr(t, "core.cron.present", map[string]any{"name": "a.b", "schedule": "@daily", "job": "true"}, env)
	wantErrContains(t, err, `param "name"`)
	_, err = runErr(t, "core.cron.present", map[string]any{"name": "a", "schedule": "@daily", "job": "a\nb"}, env)
	wantErrContains(t, err, `param "job"`)

	wantChanged(t, run(t, "core.cron.present", map[string]any{"name": "backup", "state": "absent"}, env), true)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("absent left the file: %v", err)
	}
	wantChanged(t, run(t, "core.cron.present", map[string]any{"name": "backup", "state": "absent"}, env), false)
}

const (
	testKeyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ5UqUXbk1eJrV8zEtKoqNtG7bKxRKNbsNDSyE8mvKC alice@a"
	testKeyB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0ygqTqxE1nW5KJx4pDRwzVKgM7dWkFG0cMNB0FLkO5 bob@b"
)

func TestAuthorizedKey(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	home := filepath.Join(root, me.HomeDir)
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := &module.Env{Root: root}
	file := filepath.Join(home, ".ssh/authorized_keys")
	p := map[string]any{"user": me.Username, "key": testKeyA}

	r := run(t, "core.ssh.authorized_key", p, &module.Env{Root: root, Check: true})
	wantChanged(t, r, true)
	if _, err := os.Stat(filepath.Dir(file)); !os.IsNotExist(err) || !strings.Contains(r.Diff, "+"+testKeyA) {
		t.Fatalf("check mode touched ~/.ssh or bad diff: %v\n%s", err, r.Diff)
	}
	wantChanged(t, run(t, "core.ssh.authorized_key", p, env), true)
	fi, err := os.Stat(filepath.Dir(file))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf(".ssh: %v %v", fi, err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("authorized_keys: %v %v", fi, err)
	}
	s := snap(t, file)
	wantChanged(t, run(t, "core.ssh.authorized_key", p, env), false)
	s.untouched(t, file)

	// A hand-added key and comment stay; the same key with another comment is updated in place.
	f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("# keep me\n" + testKeyB + "\n")
	f.Close()
	wantChanged(t, run(t, "core.ssh.authorized_key", map[string]any{"user": me.Username, "key": strings.Replace(testKeyA, "alice@a", "alice@new", 1)}, env), true)
	got, _ := os.ReadFile(file)
	if want := strings.Replace(testKeyA, "alice@a", "alice@new", 1) + "\n# keep me\n" + testKeyB + "\n"; string(got) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	r = run(t, "core.ssh.authorized_key", map[string]any{"user": me.Username, "key": testKeyB, "exclusive": true}, env)
	wantChanged(t, r, true)
	if got, _ := os.ReadFile(file); string(got) != "# keep me\n"+testKeyB+"\n" || r.Data["keys"] != int64(1) {
		t.Fatalf("exclusive left:\n%s (%v)", got, r.Data)
	}
	wantChanged(t, run(t, "core.ssh.authorized_key", map[string]any{"user": me.Username, "key": testKeyB, "state": "absent"}, env), true)
	if got, _ := os.ReadFile(file); string(got) != "# keep me\n" {
		t.Fatalf("absent left:\n%s", got)
	}

	_, err = runErr(t, "core.ssh.authorized_key", map[string]any{"user": me.Username, "key": "ssh-rsa notbase64 x"}, env)
	wantErrContains(t, err, "core.ssh.authorized_key on ", `param "key"`, "not an SSH public key")
	_, err = runErr(t, "core.ssh.authorized_key", map[string]any{"user": "no-such-user-x", "key": testKeyA}, env)
	wantErrContains(t, err, `param "user"`)
}

func TestSystemModulesValidate(t *testing.T) {
	for _, n := range []string{"web-1", "web-1.example.org", "a"} {
		if err := checkHostname(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	for _, n := range []string{"", "-web", "web_1", "a..b", "x y", strings.Repeat("a", 65)} {
		if err := checkHostname(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
	for _, n := range []string{"app.service", "backup.timer"} {
		if err := checkUnitName(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	for _, n := range []string{"app", ".service", "../x.service", "-x.service"} {
		if err := checkUnitName(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
	// Unconfinable: they refuse a --root rather than touch the host.
	_, err := runErr(t, "core.system.timezone", map[string]any{"name": "UTC"}, &module.Env{Root: t.TempDir()})
	wantErrContains(t, err, "cannot be confined")
}

func TestWaitModules(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int64(ln.Addr().(*net.TCPAddr).Port)
	r := run(t, "core.wait.port", map[string]any{"port": port, "timeout": int64(5)}, nil)
	wantChanged(t, r, false)
	ln.Close()
	r = run(t, "core.wait.port", map[string]any{"port": port, "state": "stopped", "timeout": int64(5)}, nil)
	wantChanged(t, r, false)
	start := time.Now()
	r = run(t, "core.wait.port", map[string]any{"port": port, "timeout": int64(1)}, nil)
	if !r.Failed || !strings.Contains(r.Msg, "timed out after 1s") || time.Since(start) > 4*time.Second {
		t.Fatalf("closed port: %+v", r)
	}
	_, err = runErr(t, "core.wait.port", map[string]any{"port": int64(70000)}, nil)
	wantErrContains(t, err, `param "port"`)
	// Inside the Keeper only through its destination policy (dispatch's
	// TestKeeperSideWaitPort); without one the probe is refused.
	_, err = runErr(t, "core.wait.port", map[string]any{"port": port}, &module.Env{InKeeper: true})
	wantErrContains(t, err, "needs the Keeper's destination policy")

	dir := t.TempDir()
	go func() {
		time.Sleep(300 * time.Millisecond)
		os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
	}()
	r = run(t, "core.wait.file", map[string]any{"path": filepath.Join(dir, "ready"), "timeout": int64(5)}, nil)
	wantChanged(t, r, false)
	if r.Data["elapsed_ms"].(int64) < 200 {
		t.Fatalf("did not wait: %+v", r)
	}
	r = run(t, "core.wait.file", map[string]any{"path": filepath.Join(dir, "never"), "timeout": int64(5)}, &module.Env{Check: true})
	if r.Failed || r.Changed || !strings.Contains(r.Msg, "check mode") {
		t.Fatalf("check mode: %+v", r)
	}
	_, err = runErr(t, "core.wait.file", map[string]any{"path": "rel"}, nil)
	wantErrContains(t, err, `param "path"`)

	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits++
		if hits < 3 {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	r = run(t, "core.wait.http", map[string]any{"url": srv.URL, "timeout": int64(10)}, nil)
	wantChanged(t, r, false)
	if r.Data["http_status"] != int64(200) || hits != 3 {
		t.Fatalf("http: %+v after %d hits", r, hits)
	}
	_, err = runErr(t, "core.wait.http", map[string]any{"url": "ftp://x"}, nil)
	wantErrContains(t, err, `param "url"`)
}
