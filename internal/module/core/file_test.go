package core

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFilePresentLifecycle(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.conf")
	params := map[string]any{"path": p, "content": "port 6379\nbind 0.0.0.0\n", "mode": "0640"}

	// Check mode on a missing file: a diff, nothing created.
	res := run(t, "core.file.present", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "+port 6379") || !strings.Contains(res.Diff, "--- /dev/null") {
		t.Errorf("check diff = %q", res.Diff)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("check mode created the file (stat err %v)", err)
	}

	wantChanged(t, run(t, "core.file.present", params, nil), true)
	if got := readFile(t, p); got != "port 6379\nbind 0.0.0.0\n" {
		t.Fatalf("content = %q", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v, want 0640", fi.Mode())
	}

	// Converged: unchanged and not touched at all.
	before := snap(t, p)
	res = run(t, "core.file.present", params, nil)
	wantChanged(t, res, false)
	before.untouched(t, p)
	if res.Data["sha256"] == "" || res.Data["mode"] != "0640" {
		t.Errorf("data = %v", res.Data)
	}

	// Check mode on changed content: diff and nothing touched.
	changed := map[string]any{"path": p, "content": "port 6380\nbind 0.0.0.0\n", "mode": "0640"}
	res = run(t, "core.file.present", changed, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "-port 6379\n+port 6380\n") {
		t.Errorf("check diff = %q", res.Diff)
	}
	before.untouched(t, p)

	// A mode-only change is done in place (same inode, same content).
	res = run(t, "core.file.present", map[string]any{"path": p, "mode": "0600"}, nil)
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "mode 0640 -> 0600") {
		t.Errorf("mode diff = %q", res.Diff)
	}
	after := snap(t, p)
	if !os.SameFile(before.fi, after.fi) || after.fi.Mode().Perm() != 0o600 {
		t.Errorf("mode change replaced the file or did not apply: %v", after.fi.Mode())
	}

	// A content change keeps the existing mode when none is given.
	res = run(t, "core.file.present", map[string]any{"path": p, "content": "x\n"}, nil)
	wantChanged(t, res, true)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 || readFile(t, p) != "x\n" {
		t.Errorf("after content change: mode %v content %q", fi.Mode(), readFile(t, p))
	}
	// No temporary files are left beside the target.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory has %d entries, want only the target", len(entries))
	}
}

func TestFilePresentEmptyAndNoContent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "touch")
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": p}, nil), true)
	if readFile(t, p) != "" {
		t.Fatal("want an empty file")
	}
	if err := os.WriteFile(p, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": p}, nil), false)
	before.untouched(t, p)
}

func TestFilePresentOwner(t *testing.T) {
	needRoot(t)
	p := filepath.Join(t.TempDir(), "owned")
	params := map[string]any{"path": p, "content": "a\n", "owner": "nobody", "group": "65534", "mode": "2755"}
	wantChanged(t, run(t, "core.file.present", params, nil), true)
	fi, _ := os.Stat(p)
	uid, gid := ownerOf(fi)
	if uid != 65534 || gid != 65534 || fi.Mode()&os.ModeSetgid == 0 {
		t.Fatalf("owner %d:%d mode %v, want nobody:65534 with setgid", uid, gid, fi.Mode())
	}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.present", params, nil), false)
	before.untouched(t, p)

	// Rewriting content keeps the owner of the replaced file.
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": p, "content": "b\n"}, nil), true)
	fi, _ = os.Stat(p)
	if uid, gid := ownerOf(fi); uid != 65534 || gid != 65534 {
		t.Fatalf("owner after rewrite %d:%d, want kept", uid, gid)
	}
	// An owner change alone is a chown in place that keeps setgid.
	res := run(t, "core.file.present", map[string]any{"path": p, "owner": "root"}, nil)
	wantChanged(t, res, true)
	fi, _ = os.Stat(p)
	if uid, _ := ownerOf(fi); uid != 0 || fi.Mode()&os.ModeSetgid == 0 {
		t.Fatalf("after chown: uid %d mode %v", uid, fi.Mode())
	}
}

func TestFilePresentErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"relative path", map[string]any{"path": "etc/x", "content": ""}, []string{"must be absolute"}},
		{"missing parent", map[string]any{"path": filepath.Join(dir, "no/such/x"), "content": ""}, []string{"does not exist", "makedirs"}},
		{"a directory", map[string]any{"path": dir, "content": ""}, []string{"not a regular file"}},
		{"bad mode", map[string]any{"path": filepath.Join(dir, "m"), "mode": "rw-r--r--"}, []string{"octal mode"}},
		{"int mode", map[string]any{"path": filepath.Join(dir, "m"), "mode": 420}, []string{`"mode" must be string`}},
		{"unknown owner", map[string]any{"path": filepath.Join(dir, "m"), "owner": "no-such-user-xyz"}, []string{"no-such-user-xyz"}},
		{"unknown param", map[string]any{"path": filepath.Join(dir, "m"), "contents": "x"}, []string{`unknown param "contents"`}},
		{"missing path", map[string]any{"content": "x"}, []string{`missing required param "path"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runErr(t, "core.file.present", tt.params, nil)
			wantErrContains(t, err, tt.want...)
		})
	}
}

func TestFilePresentMakedirs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a/b/c.conf")
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": p, "content": "x", "makedirs": true}, nil), true)
	if readFile(t, p) != "x" {
		t.Fatal("content not written")
	}
}

func TestFilePresentFollowsSymlinkOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real.conf"), filepath.Join(dir, "link.conf")
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.conf", link); err != nil {
		t.Fatal(err)
	}
	// Without follow a symlink at the path is refused (SPEC §9) and
	// nothing is touched.
	before := snap(t, target)
	_, err := runErr(t, "core.file.present", map[string]any{"path": link, "content": "new\n"}, nil)
	wantErrContains(t, err, "path is a symlink", "follow: true")
	before.untouched(t, target)
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": link, "content": "new\n", "follow": true}, nil), true)
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if readFile(t, target) != "new\n" {
		t.Fatal("the link target was not updated")
	}
}

func TestFileConfinedToRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink inside the root pointing at an absolute path outside it
	// resolves inside the root, as it would after a chroot.
	if err := os.Symlink(outside, filepath.Join(root, "etc/escape")); err != nil {
		t.Fatal(err)
	}
	env := &module.Env{Root: root}
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": "/etc/app.conf", "content": "ok\n"}, env), true)
	if readFile(t, filepath.Join(root, "etc/app.conf")) != "ok\n" {
		t.Fatal("file not written under the root")
	}
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": "/etc/escape/x", "content": "x", "makedirs": true}, env), true)
	if _, err := os.Stat(filepath.Join(outside, "x")); !os.IsNotExist(err) {
		t.Fatal("a symlink let the write escape the root")
	}
	if readFile(t, filepath.Join(root, outside, "x")) != "x" {
		t.Fatal("the symlinked write did not land inside the root")
	}
	_, err := runErr(t, "core.file.present", map[string]any{"path": "/etc/../../x", "content": "x"}, env)
	wantErrContains(t, err, "'..'", "--root")
	_, err = runErr(t, "core.file.absent", map[string]any{"path": "/"}, env)
	wantErrContains(t, err, "refusing to remove the root")
	wantChanged(t, run(t, "core.file.directory", map[string]any{"path": "/var/lib/app"}, env), true)
	if fi, err := os.Stat(filepath.Join(root, "var/lib/app")); err != nil || !fi.IsDir() {
		t.Fatal("directory not created under the root")
	}
	// Unconfinable modules refuse under a root.
	_, err = runErr(t, "core.pkg.installed", map[string]any{"name": "sl"}, env)
	wantErrContains(t, err, "cannot be confined")
}

func TestFileRendered(t *testing.T) {
	files := fstest.MapFS{
		"templates/redis.conf.tmpl": {Data: []byte("port {{ .port }}\nmaxmemory {{ .essence.maxmemory }}\nhost {{ .soulprint.self.sid }}\nreplicas {{ join \",\" .vars.replicas }}\n")},
		"templates/missing.tmpl":    {Data: []byte("x {{ .nope }}\n")},
		"templates/bad.tmpl":        {Data: []byte("x {{ .port \n")},
	}
	env := &module.Env{Files: files, TemplateData: map[string]any{
		"essence":   map[string]any{"maxmemory": "1gb"},
		"soulprint": map[string]any{"self": map[string]any{"sid": "h1"}},
		"vars":      map[string]any{"replicas": []any{"h2", "h3"}},
	}}
	p := filepath.Join(t.TempDir(), "redis.conf")
	params := map[string]any{"path": p, "template": "templates/redis.conf.tmpl", "vars": map[string]any{"port": 6379}}
	res := run(t, "core.file.rendered", params, env)
	wantChanged(t, res, true)
	want := "port 6379\nmaxmemory 1gb\nhost h1\nreplicas h2,h3\n"
	if diff := cmp.Diff(want, readFile(t, p)); diff != "" {
		t.Fatalf("rendered (-want +got):\n%s", diff)
	}
	if res.Data["template"] != "templates/redis.conf.tmpl" {
		t.Errorf("data = %v", res.Data)
	}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.rendered", params, env), false)
	before.untouched(t, p)

	checkEnv := *env
	checkEnv.Check = true
	res = run(t, "core.file.rendered", map[string]any{"path": p, "template": "templates/redis.conf.tmpl", "vars": map[string]any{"port": 6380}}, &checkEnv)
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "-port 6379\n+port 6380\n") {
		t.Errorf("diff = %q", res.Diff)
	}
	before.untouched(t, p)

	errTests := []struct {
		name, template string
		env            *module.Env
		want           []string
	}{
		{"missing key", "templates/missing.tmpl", env, []string{"nope", "missing.tmpl"}},
		{"parse error", "templates/bad.tmpl", env, []string{"parsing template", "bad.tmpl"}},
		{"no such template", "templates/none.tmpl", env, []string{"templates/none.tmpl not found"}},
		{"escape", "../etc/passwd", env, []string{"without '..'"}},
		{"no bundle", "templates/redis.conf.tmpl", &module.Env{}, []string{"no bundle files"}},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runErr(t, "core.file.rendered", map[string]any{"path": p, "template": tt.template, "vars": map[string]any{"port": 1}}, tt.env)
			wantErrContains(t, err, tt.want...)
			before.untouched(t, p)
		})
	}
}

func TestFileAbsent(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	sub := filepath.Join(dir, "sub")
	if err := os.WriteFile(f, []byte("bye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sub, "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := run(t, "core.file.absent", map[string]any{"path": f}, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "-bye") {
		t.Errorf("diff = %q", res.Diff)
	}
	if _, err := os.Stat(f); err != nil {
		t.Fatal("check mode removed the file")
	}
	for _, p := range []string{f, sub} {
		wantChanged(t, run(t, "core.file.absent", map[string]any{"path": p}, nil), true)
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still exists", p)
		}
		wantChanged(t, run(t, "core.file.absent", map[string]any{"path": p}, nil), false)
	}
	// A symlink is removed, not its target.
	target, link := filepath.Join(dir, "t"), filepath.Join(dir, "l")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	wantChanged(t, run(t, "core.file.absent", map[string]any{"path": link}, nil), true)
	if _, err := os.Stat(target); err != nil {
		t.Fatal("removing a symlink removed its target")
	}
}

func TestFileDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a/b")
	params := map[string]any{"path": p, "mode": "0750"}
	res := run(t, "core.file.directory", params, &module.Env{Check: true})
	wantChanged(t, res, true)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("check mode created the directory")
	}
	wantChanged(t, run(t, "core.file.directory", params, nil), true)
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Fatalf("directory not created with 0750: %v %v", fi, err)
	}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.directory", params, nil), false)
	before.untouched(t, p)
	res = run(t, "core.file.directory", map[string]any{"path": p, "mode": "0700"}, &module.Env{Check: true})
	wantChanged(t, res, true)
	if !strings.Contains(res.Diff, "mode 0750 -> 0700") {
		t.Errorf("diff = %q", res.Diff)
	}
	before.untouched(t, p)
	wantChanged(t, run(t, "core.file.directory", map[string]any{"path": p, "mode": "0700"}, nil), true)

	f := filepath.Join(filepath.Dir(p), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runErr(t, "core.file.directory", map[string]any{"path": f}, nil)
	wantErrContains(t, err, "not a directory")
}

// crashEnv makes the test binary a child that writes a large file with
// core.file.present until it is killed (see TestMain).
const crashEnv = "SOULSTACK_TEST_CRASH_WRITE"

const crashSize = 64 << 20

func crashChild(path string) {
	content := strings.Repeat("0123456789abcdef", crashSize/16)
	m, _ := module.Lookup("core.file.present")
	_, err := m.Apply(context.Background(), map[string]any{"path": path, "content": content}, &module.Env{})
	if err != nil {
		os.Exit(3)
	}
	os.Exit(0)
}

// TestFilePresentKilledMidWrite SIGKILLs a writer in the middle of a large
// write and checks the target is the old file or the complete new one.
func TestFilePresentKilledMidWrite(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "big.dat")
	const old = "old content\n"
	if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	full := strings.Repeat("0123456789abcdef", crashSize/16)
	midWrite := 0
	for attempt := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+target)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill as soon as the temporary file has data, before the rename.
		deadline := time.Now().Add(20 * time.Second)
		killedAt := int64(-1)
		for time.Now().Before(deadline) && killedAt < 0 {
			tmps, _ := filepath.Glob(filepath.Join(dir, ".big.dat.soulstack-*"))
			for _, tmp := range tmps {
				if fi, err := os.Stat(tmp); err == nil && fi.Size() > int64(attempt)*(crashSize/8) {
					_ = cmd.Process.Signal(syscall.SIGKILL)
					killedAt = fi.Size()
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
		_ = cmd.Wait()
		if killedAt < 0 {
			t.Fatalf("attempt %d: the child never wrote a temporary file", attempt)
		}
		if killedAt < crashSize {
			midWrite++
		}
		got, err := os.ReadFile(target)
		if err != nil {
			t.Fatalf("attempt %d: target unreadable after the kill: %v", attempt, err)
		}
		if string(got) != old && !bytes.Equal(got, []byte(full)) {
			t.Fatalf("attempt %d: target is partial: %d bytes", attempt, len(got))
		}
		t.Logf("attempt %d: killed with %d bytes in the temporary file; target is %s", attempt, killedAt,
			map[bool]string{true: "the old file", false: "the complete new file"}[string(got) == old])
		if string(got) != old {
			if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if midWrite == 0 {
		t.Errorf("no attempt was killed in the middle of the write; the test proved nothing")
	}
}
