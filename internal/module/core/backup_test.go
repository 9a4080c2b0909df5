package core

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

// backupRE is the name Ansible gives a backup: <path>.<pid>.<stamp>~.
var backupRE = regexp.MustCompile(`^(.*)\.(\d+)\.(\d{4}-\d{2}-\d{2}@\d{2}:\d{2}:\d{2})~$`)

// backups lists the backup files of path.
func backups(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + ".*~")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBackup(t *testing.T) {
	files := fstest.MapFS{"files/app.conf": {Data: []byte("new\n")}}
	for _, tc := range []struct {
		mod    string
		params map[string]any
	}{
		{"core.file.present", map[string]any{"content": "new\n"}},
		{"core.file.copied", map[string]any{"src": "app.conf"}},
		{"core.file.line", map[string]any{"regexp": "^old", "line": "new"}},
		{"core.file.block", map[string]any{"block": "new"}},
		{"core.file.replace", map[string]any{"regexp": "old", "replace": "new"}},
	} {
		t.Run(tc.mod, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "app.conf")
			writeTestFile(t, p, "old\n")
			if err := os.Chmod(p, 0o640); err != nil {
				t.Fatal(err)
			}
			params := map[string]any{"path": p, "backup": true}
			for k, v := range tc.params {
				params[k] = v
			}
			// Check mode writes no backup.
			wantChanged(t, run(t, tc.mod, params, &module.Env{Files: files, Check: true}), true)
			if b := backups(t, p); len(b) != 0 {
				t.Fatalf("check mode made backups %v", b)
			}
			res := run(t, tc.mod, params, &module.Env{Files: files})
			wantChanged(t, res, true)
			name, _ := res.Data["backup_file"].(string)
			m := backupRE.FindStringSubmatch(name)
			if m == nil || m[1] != p || m[2] != strconv.Itoa(os.Getpid()) {
				t.Fatalf("backup_file %q is not %s.<pid>.<stamp>~", name, p)
			}
			if stamp, err := time.ParseInLocation("2006-01-02@15:04:05", m[3], time.Local); err != nil || time.Since(stamp) > time.Minute {
				t.Errorf("stamp %q: %v", m[3], err)
			}
			if got := readFile(t, name); got != "old\n" {
				t.Errorf("backup holds %q, want the old content", got)
			}
			if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("backup mode %v (%v), want the file's 0640", fi.Mode(), err)
			}
			if readFile(t, p) == "old\n" {
				t.Fatal("the file was not changed")
			}
			// Unchanged: no second backup, no backup_file.
			res = run(t, tc.mod, params, &module.Env{Files: files})
			wantChanged(t, res, false)
			if _, ok := res.Data["backup_file"]; ok || len(backups(t, p)) != 1 {
				t.Fatalf("second run: data %v, backups %v", res.Data, backups(t, p))
			}
		})
	}
}

// No backup of a file that did not exist, nor when only its mode changes.
func TestBackupNotNeeded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "new.conf")
	res := run(t, "core.file.line", map[string]any{"path": p, "line": "x", "create": true, "backup": true}, nil)
	wantChanged(t, res, true)
	if _, ok := res.Data["backup_file"]; ok || len(backups(t, p)) != 0 {
		t.Fatalf("created file: data %v, backups %v", res.Data, backups(t, p))
	}
	res = run(t, "core.file.present", map[string]any{"path": p, "mode": "0600", "backup": true}, nil)
	wantChanged(t, res, true)
	if _, ok := res.Data["backup_file"]; ok || len(backups(t, p)) != 0 {
		t.Fatalf("mode change: data %v, backups %v", res.Data, backups(t, p))
	}
}

// Two backups of one file in the same second (one long-lived soul
// process) do not overwrite each other.
func TestBackupSameSecond(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	writeTestFile(t, p, "v1\n")
	var names []string
	for _, c := range []string{"v2\n", "v3\n", "v4\n"} {
		res := run(t, "core.file.present", map[string]any{"path": p, "content": c, "backup": true}, nil)
		names = append(names, res.Data["backup_file"].(string))
	}
	seen := map[string]bool{}
	for i, n := range names {
		if seen[n] {
			t.Fatalf("backup name %s used twice: %v", n, names)
		}
		seen[n] = true
		if want := []string{"v1\n", "v2\n", "v3\n"}[i]; readFile(t, n) != want {
			t.Errorf("%s holds %q, want %q", n, readFile(t, n), want)
		}
	}
}

func TestBackupName(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.Local)
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "/etc/x.conf.42.2026-03-04@05:06:07~"},
		{2, "/etc/x.conf.42.2026-03-04@05:06:07.2~"},
	} {
		if got := backupName("/etc/x.conf", 42, at, tc.n); got != tc.want {
			t.Errorf("backupName(n=%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// The backup keeps the owner of the file.
func TestBackupOwner(t *testing.T) {
	needRoot(t)
	p := filepath.Join(t.TempDir(), "f")
	writeTestFile(t, p, "old\n")
	if err := os.Chown(p, nobodyID, nobodyID); err != nil {
		t.Fatal(err)
	}
	res := run(t, "core.file.replace", map[string]any{"path": p, "regexp": "old", "replace": "new", "backup": true}, nil)
	fi, err := os.Stat(res.Data["backup_file"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid := ownerOf(fi); uid != nobodyID || gid != nobodyID {
		t.Fatalf("backup owned by %d:%d, want the file's %d:%d", uid, gid, nobodyID, nobodyID)
	}
}
