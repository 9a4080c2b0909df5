package core

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// needRoot skips a test that changes the host (packages, services, users,
// sysctl, ownership) when not root, and fails it in CI, where everything
// must run.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root, and CI (CI=true) must run it: run the suite as root")
	}
	t.Skip("needs root: it installs packages, manages services, users or sysctl for real (CI runs it as root)")
}

// lockUntilCleanup holds mu until the test and all its cleanups are done
// (cleanups registered later run first), so the next test sharing the
// resource finds it restored.
func lockUntilCleanup(t *testing.T, mu *sync.Mutex) {
	t.Helper()
	mu.Lock()
	t.Cleanup(mu.Unlock)
}

// run calls the registered module name and fails the test on an error.
func run(t *testing.T, name string, params map[string]any, env *module.Env) domain.Result {
	t.Helper()
	res, err := runErr(t, name, params, env)
	if err != nil {
		t.Fatalf("%s %v: %v", name, params, err)
	}
	return res
}

// runErr calls the registered module name with a test deadline.
func runErr(t *testing.T, name string, params map[string]any, env *module.Env) (domain.Result, error) {
	t.Helper()
	m, ok := module.Lookup(name)
	if !ok {
		t.Fatalf("module %s is not registered", name)
	}
	if env == nil {
		env = &module.Env{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return m.Apply(ctx, params, env)
}

// wantChanged asserts the changed and failed flags of res.
func wantChanged(t *testing.T, res domain.Result, changed bool) {
	t.Helper()
	if res.Failed {
		t.Fatalf("result failed: %s", res.Msg)
	}
	if res.Changed != changed {
		t.Fatalf("changed = %v, want %v (msg %q, diff %q)", res.Changed, changed, res.Msg, res.Diff)
	}
}

// wantErrContains asserts that err mentions every part.
func wantErrContains(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

// snapshot records what a "touches nothing" assertion compares: the
// identity, mtime, ctime, mode and size of a path.
type snapshot struct {
	fi    fs.FileInfo
	ctime time.Time
}

func snap(t *testing.T, path string) snapshot {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return snapshot{fi: fi, ctime: ctimeOf(fi)}
}

// untouched asserts path is the same inode with the same mtime, ctime,
// mode and size as in s.
func (s snapshot) untouched(t *testing.T, path string) {
	t.Helper()
	now := snap(t, path)
	switch {
	case !os.SameFile(s.fi, now.fi):
		t.Fatalf("%s was replaced (new inode)", path)
	case !s.fi.ModTime().Equal(now.fi.ModTime()):
		t.Fatalf("%s mtime changed: %v -> %v", path, s.fi.ModTime(), now.fi.ModTime())
	case !s.ctime.Equal(now.ctime):
		t.Fatalf("%s ctime changed (metadata touched): %v -> %v", path, s.ctime, now.ctime)
	case s.fi.Mode() != now.fi.Mode() || s.fi.Size() != now.fi.Size():
		t.Fatalf("%s mode/size changed: %v %d -> %v %d", path, s.fi.Mode(), s.fi.Size(), now.fi.Mode(), now.fi.Size())
	}
}
func ctimeOf(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return time.Time{}
}
