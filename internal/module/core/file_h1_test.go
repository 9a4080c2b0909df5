package core

// Audit finding H1 (security-audit-2026-12.md): unconfined file modules
// followed symlinks planted by a local unprivileged user, so root's write,
// chown or delete landed on any file of the host. Each test below plants
// the attack as nobody (uid 65534, from a child process with that
// credential) in a directory nobody owns, runs the module as root, and
// asserts the attack fails and the target is untouched.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/soulstack/soulstack/internal/module"
)

const nobodyID = 65534

// h1Lab is the audit's layout: $U/appdir owned by nobody, root's
// $U/etc-sim/sudoers-sim (0440) and $U/etc-dir, $U/important/data.
type h1Lab struct {
	u, appdir, sudoers, etcDir, important string
}

func newH1Lab(t *testing.T) h1Lab {
	t.Helper()
	needRoot(t)
	u := t.TempDir()
	// t.TempDir's directories are 0700: let nobody walk to its own.
	for _, d := range []string{filepath.Dir(u), u} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l := h1Lab{u: u, appdir: filepath.Join(u, "appdir"), sudoers: filepath.Join(u, "etc-sim/sudoers-sim"),
		etcDir: filepath.Join(u, "etc-dir"), important: filepath.Join(u, "important")}
	for _, d := range []string{l.appdir, filepath.Dir(l.sudoers), l.etcDir, l.important} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(l.sudoers, []byte("ORIGINAL ROOT-OWNED CONTENT\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.important, "data"), []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(l.appdir, nobodyID, nobodyID); err != nil {
		t.Fatal(err)
	}
	return l
}

// asNobody runs a shell command as nobody, as the attacker would.
func asNobody(t *testing.T, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %s: %v\n%s", script, err, out)
	}
}

// rootOwned asserts path still belongs to root with the given mode and
// content (content "" skips the content check).
func rootOwned(t *testing.T, path string, mode os.FileMode, content string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if uid, _ := ownerOf(fi); uid != 0 || fi.Mode().Perm() != mode {
		t.Fatalf("%s is now uid %d mode %v, want root's with %v", path, uid, fi.Mode(), mode)
	}
	if content != "" && readFile(t, path) != content {
		t.Fatalf("%s content changed to %q", path, readFile(t, path))
	}
}

// H1 attack 1: app.conf -> sudoers in nobody's directory, a task manages
// app.conf with owner nobody. Refused with "path is a symlink"; with
// follow: true refused as unsafe (nobody's directory leads to root's
// file). sudoers keeps its owner, mode and content.
func TestH1FilePresentPlantedSymlinkToRootFile(t *testing.T) {
	l := newH1Lab(t)
	link := filepath.Join(l.appdir, "app.conf")
	asNobody(t, "ln -s "+l.sudoers+" "+link)
	before := snap(t, l.sudoers)
	params := map[string]any{"path": link, "content": "app_setting=1\n", "owner": "nobody", "mode": "0640"}
	_, err := runErr(t, "core.file.present", params, nil)
	wantErrContains(t, err, "path is a symlink")
	params["follow"] = true
	_, err = runErr(t, "core.file.present", params, nil)
	wantErrContains(t, err, "unsafe path")
	for _, m := range []string{"core.file.line", "core.file.replace"} {
		if _, ok := module.Lookup(m); !ok {
			continue
		}
		p := map[string]any{"path": link, "line": "nobody ALL=(ALL) NOPASSWD: ALL", "regexp": "^ORIGINAL", "replace": "nobody ALL=(ALL) NOPASSWD: ALL"}
		if m == "core.file.line" {
			delete(p, "replace")
		} else {
			delete(p, "line")
		}
		_, err := runErr(t, m, p, nil)
		wantErrContains(t, err, "path is a symlink")
	}
	before.untouched(t, l.sudoers)
	rootOwned(t, l.sudoers, 0o440, "ORIGINAL ROOT-OWNED CONTENT\n")
	// nobody still cannot write it.
	cmd := exec.Command("/bin/sh", "-c", "echo 'nobody ALL=(ALL) NOPASSWD: ALL' > "+l.sudoers)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}}
	if err := cmd.Run(); err == nil {
		t.Fatal("nobody could write the sudoers stand-in")
	}
}

// H1 attack 2: appdir/data -> a root directory; core.file.directory with
// owner nobody must not chown or chmod the root directory.
func TestH1FileDirectoryPlantedSymlinkToRootDir(t *testing.T) {
	l := newH1Lab(t)
	link := filepath.Join(l.appdir, "data")
	asNobody(t, "ln -s "+l.etcDir+" "+link)
	before := snap(t, l.etcDir)
	params := map[string]any{"path": link, "owner": "nobody", "mode": "0777"}
	_, err := runErr(t, "core.file.directory", params, nil)
	wantErrContains(t, err, "path is a symlink")
	params["follow"] = true
	_, err = runErr(t, "core.file.directory", params, nil)
	wantErrContains(t, err, "unsafe path")
	before.untouched(t, l.etcDir)
	rootOwned(t, l.etcDir, 0o755, "")
}

// H1 attack 3: appdir/cache -> root's important/; core.file.absent of
// appdir/cache/data must not delete important/data.
func TestH1FileAbsentThroughPlantedParentSymlink(t *testing.T) {
	l := newH1Lab(t)
	asNobody(t, "ln -s "+l.important+" "+filepath.Join(l.appdir, "cache"))
	data := filepath.Join(l.important, "data")
	before := snap(t, data)
	_, err := runErr(t, "core.file.absent", map[string]any{"path": filepath.Join(l.appdir, "cache/data")}, nil)
	wantErrContains(t, err, "unsafe path", "cache")
	before.untouched(t, data)
	// Removing the link itself removes the link, never the target.
	wantChanged(t, run(t, "core.file.absent", map[string]any{"path": filepath.Join(l.appdir, "cache")}, nil), true)
	before.untouched(t, data)
	if _, err := os.Lstat(filepath.Join(l.appdir, "cache")); !os.IsNotExist(err) {
		t.Fatal("the symlink was not removed")
	}
}

// H1, parent variant: a symlinked parent directory in nobody's directory
// (conf.d -> root's etc-sim) must not carry a write (or makedirs) into it.
func TestH1FilePresentThroughPlantedParentSymlink(t *testing.T) {
	l := newH1Lab(t)
	asNobody(t, "ln -s "+filepath.Dir(l.sudoers)+" "+filepath.Join(l.appdir, "conf.d"))
	before := snap(t, l.sudoers)
	dirBefore := snap(t, filepath.Dir(l.sudoers))
	for _, p := range []map[string]any{
		{"path": filepath.Join(l.appdir, "conf.d/sudoers-sim"), "content": "owned\n", "owner": "nobody"},
		{"path": filepath.Join(l.appdir, "conf.d/new/x.conf"), "content": "x\n", "makedirs": true},
	} {
		_, err := runErr(t, "core.file.present", p, nil)
		wantErrContains(t, err, "unsafe path")
	}
	before.untouched(t, l.sudoers)
	dirBefore.untouched(t, filepath.Dir(l.sudoers))
	if _, err := os.Stat(filepath.Join(filepath.Dir(l.sudoers), "new")); !os.IsNotExist(err) {
		t.Fatal("makedirs created a directory through the planted link")
	}
}

// H1, hard-link variant (hosts with fs.protected_hardlinks=0): a hard link
// to a root file in nobody's directory is neither read (into a diff) nor
// chowned in place; replacing it is a rename that leaves the root file
// alone.
func TestH1FilePresentPlantedHardLink(t *testing.T) {
	l := newH1Lab(t)
	link := filepath.Join(l.appdir, "app.conf")
	// Planted by root here because the kernel's protected_hardlinks stops
	// nobody; the module must not rely on that sysctl.
	if err := os.Link(l.sudoers, link); err != nil {
		t.Fatal(err)
	}
	before := snap(t, l.sudoers)
	_, err := runErr(t, "core.file.present", map[string]any{"path": link, "owner": "nobody", "mode": "0666"}, nil)
	wantErrContains(t, err, "unsafe path", "hard link")
	before.untouched(t, l.sudoers)
	// Removing the name is safe (the link count, hence the ctime, of the
	// root file changes; nothing else).
	res, err := runErr(t, "core.file.absent", map[string]any{"path": link}, nil)
	if err != nil || strings.Contains(res.Diff, "ORIGINAL") {
		t.Fatalf("absent of a planted hard link: err %v, diff %q (must not show the content)", err, res.Diff)
	}
	rootOwned(t, l.sudoers, 0o440, "ORIGINAL ROOT-OWNED CONTENT\n")
}

// H1, sticky-directory variant: in a world-writable sticky directory (like
// /tmp) root does not follow a symlink nobody owns (the kernel's
// protected_symlinks rule, which a path walked by hand must apply itself).
func TestH1StickyDirectorySymlinkNotFollowed(t *testing.T) {
	l := newH1Lab(t)
	tmp := filepath.Join(l.u, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	asNobody(t, "ln -s ../etc-sim "+filepath.Join(tmp, "cfg"))
	before := snap(t, l.sudoers)
	_, err := runErr(t, "core.file.present", map[string]any{"path": filepath.Join(tmp, "cfg/sudoers-sim"), "content": "x\n"}, nil)
	wantErrContains(t, err, "unsafe path")
	before.untouched(t, l.sudoers)
	// A hard link to root's file in the sticky directory (root-owned like
	// the directory) is not read into a diff nor chowned either.
	if err := os.Link(l.sudoers, filepath.Join(tmp, "app.conf")); err != nil {
		t.Fatal(err)
	}
	before = snap(t, l.sudoers)
	for _, p := range []map[string]any{
		{"path": filepath.Join(tmp, "app.conf"), "content": "x\n"},
		{"path": filepath.Join(tmp, "app.conf"), "owner": "nobody"},
	} {
		res, err := runErr(t, "core.file.present", p, nil)
		wantErrContains(t, err, "hard link")
		if strings.Contains(res.Diff, "ORIGINAL") {
			t.Fatalf("diff shows the linked file: %q", res.Diff)
		}
	}
	before.untouched(t, l.sudoers)
}

// The H1 rules leave legitimate use alone: root manages files in nobody's
// directory (creating parents owned by nobody, so the path stays safe),
// idempotently, and follows root's own symlinks (like /lib -> usr/lib).
func TestH1LegitimateWritesStillWork(t *testing.T) {
	l := newH1Lab(t)
	p := filepath.Join(l.appdir, "conf/app.conf")
	params := map[string]any{"path": p, "content": "a=1\n", "owner": "nobody", "mode": "0640", "makedirs": true}
	wantChanged(t, run(t, "core.file.present", params, nil), true)
	fi, _ := os.Stat(filepath.Dir(p))
	if uid, _ := ownerOf(fi); uid != nobodyID {
		t.Fatalf("a parent created in nobody's directory is owned by %d, want nobody", uid)
	}
	before := snap(t, p)
	wantChanged(t, run(t, "core.file.present", params, nil), false)
	before.untouched(t, p)
	// A root-owned file in nobody's directory (owner: root) stays
	// manageable: only hard links to another owner's file are refused.
	rp := filepath.Join(l.appdir, "root.conf")
	rparams := map[string]any{"path": rp, "content": "r\n", "owner": "root", "mode": "0600"}
	wantChanged(t, run(t, "core.file.present", rparams, nil), true)
	wantChanged(t, run(t, "core.file.present", rparams, nil), false)

	usr := filepath.Join(l.u, "usr/lib")
	if err := os.MkdirAll(usr, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/lib", filepath.Join(l.u, "lib")); err != nil {
		t.Fatal(err)
	}
	wantChanged(t, run(t, "core.file.present", map[string]any{"path": filepath.Join(l.u, "lib/unit.service"), "content": "u\n"}, nil), true)
	if readFile(t, filepath.Join(usr, "unit.service")) != "u\n" {
		t.Fatal("a write through root's own parent symlink did not land")
	}
}

// H1, race variant: nobody swaps a directory of the path with a symlink to
// root's directory as fast as it can while root writes; the walk holds
// each directory open and checks what it opened, so no write, chown or
// delete ever lands in root's directory.
func TestH1SymlinkSwapRace(t *testing.T) {
	l := newH1Lab(t)
	d := filepath.Join(l.appdir, "d")
	etc := filepath.Dir(l.sudoers)
	cmd := exec.Command("/bin/sh", "-c", "while :; do rm -rf d; mkdir d; rm -rf d; ln -s "+etc+" d; done")
	cmd.Dir = l.appdir
	// Its own process group: killing the group also stops the rm, mkdir
	// or ln it is running, which would otherwise still create d while the
	// temporary directory is being removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stopSwapper := func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stopSwapper)
	before := snap(t, l.sudoers)
	dirBefore := snap(t, etc)
	wrote, refused := 0, 0
	for i := range 300 {
		p := map[string]any{"path": filepath.Join(d, "sudoers-sim"), "content": "pwned\n", "owner": "nobody", "mode": "0666"}
		mod := "core.file.present"
		if i%3 == 1 {
			mod, p = "core.file.absent", map[string]any{"path": filepath.Join(d, "sudoers-sim")}
		} else if i%3 == 2 {
			mod, p = "core.file.directory", map[string]any{"path": filepath.Join(d, "x"), "owner": "nobody"}
		}
		if res, err := runErr(t, mod, p, nil); err == nil && res.Changed {
			wrote++
		} else {
			refused++
		}
	}
	stopSwapper()
	t.Logf("300 tasks during the swap race: %d changed nobody's directory, %d refused or failed", wrote, refused)
	before.untouched(t, l.sudoers)
	dirBefore.untouched(t, etc)
	rootOwned(t, l.sudoers, 0o440, "ORIGINAL ROOT-OWNED CONTENT\n")
}

// H1 for the modules that write content from the repository or edit in
// place: core.file.rendered, core.file.copied and core.file.block through
// nobody's app.conf -> sudoers refuse with "path is a symlink", through a
// symlinked parent (conf.d -> root's etc-sim) as an unsafe path, and
// sudoers keeps owner, mode and content.
func TestH1RenderedCopiedBlockPlantedLinks(t *testing.T) {
	l := newH1Lab(t)
	asNobody(t, "ln -s "+l.sudoers+" "+filepath.Join(l.appdir, "app.conf")+" && ln -s "+filepath.Dir(l.sudoers)+" "+filepath.Join(l.appdir, "conf.d"))
	before := snap(t, l.sudoers)
	env := &module.Env{Files: fstest.MapFS{
		"templates/app.conf.tmpl": {Data: []byte("nobody ALL=(ALL) NOPASSWD: ALL\n")},
		"files/app.conf":          {Data: []byte("nobody ALL=(ALL) NOPASSWD: ALL\n")},
	}}
	for _, path := range []string{filepath.Join(l.appdir, "app.conf"), filepath.Join(l.appdir, "conf.d", filepath.Base(l.sudoers))} {
		want := "path is a symlink"
		if strings.Contains(path, "conf.d") {
			want = "unsafe path"
		}
		for _, c := range []struct {
			module string
			params map[string]any
		}{
			{"core.file.rendered", map[string]any{"template": "templates/app.conf.tmpl", "owner": "nobody"}},
			{"core.file.copied", map[string]any{"src": "app.conf", "owner": "nobody"}},
			{"core.file.block", map[string]any{"block": "nobody ALL=(ALL) NOPASSWD: ALL"}},
		} {
			c.params["path"] = path
			_, err := runErr(t, c.module, c.params, env)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s on %s: %v, want %q", c.module, path, err, want)
			}
		}
	}
	before.untouched(t, l.sudoers)
	rootOwned(t, l.sudoers, 0o440, "ORIGINAL ROOT-OWNED CONTENT\n")
}
