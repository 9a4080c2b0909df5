package core

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// backupParam is the backup param of every module that writes a file
// through ensureFile (parseFileWant reads it).
var backupParam = module.Param{Type: module.TypeBool, Default: false,
	Description: "before replacing an existing file whose content changes, keep a copy of it next to it, named <path>.<pid>.<YYYY-MM-DD@HH:MM:SS~> as Ansible names it (same owner and mode); its path is returned as backup_file. Not in check mode, and not when only mode or owner change"}

// backupOutput is the result field of backup: true.
var backupOutput = outputField(module.TypeString, "with backup: true, the path of the copy of the file as it was before this change (absent when nothing was written)")

// backupName is the name Ansible's backup_local gives a copy of path made
// at now: "<path>.<pid>.<YYYY-MM-DD@HH:MM:SS~>" in local time. n > 0 (a
// copy of the same second already exists: the soul is one long-lived
// process, unlike Ansible's one process per task) adds ".<n>" before "~".
func backupName(path string, pid int, now time.Time, n int) string {
	stamp := now.Format("2006-01-02@15:04:05")
	if n > 0 {
		stamp += "." + strconv.Itoa(n)
	}
	return fmt.Sprintf("%s.%d.%s~", path, pid, stamp)
}

// writeBackup keeps a copy of old (the content of the file at path, with
// its mode and owner) next to path, through safefs: the copy is written
// like any file (temp file 0600, owner and mode set on the descriptor,
// renamed), never through a symlink, and never over an existing file. It
// returns the path of the copy.
func writeBackup(env *module.Env, path string, old []byte, fi safefs.Info) (string, error) {
	fsys := fsOf(env)
	now := time.Now()
	for n := 0; n < 100; n++ {
		name := backupName(path, os.Getpid(), now, n)
		t, err := fsys.Open(name, safefs.Options{})
		if err != nil {
			return "", fmt.Errorf("backup of %s: %w", path, err)
		}
		_, exists, err := t.Lstat()
		if err == nil && !exists {
			err = t.WriteFile(old, fi.Mode&permBits, fi.UID, fi.GID)
		}
		t.Close()
		if err != nil {
			return "", fmt.Errorf("backup of %s to %s: %w", path, name, err)
		}
		if !exists {
			return name, nil
		}
	}
	return "", fmt.Errorf("backup of %s: 100 copies named %s already exist", path, backupName(path, os.Getpid(), now, 0))
}
