package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	register("core.file.stat", module.Schema{
		Summary: "Describe a path (read-only probe): exists, type, mode, owner, size, sha256, mtime",
		Params: map[string]module.Param{
			"path":     str(true, "absolute path to describe"),
			"follow":   {Type: module.TypeBool, Default: false, Description: "describe what a symlink at path points at, not the link"},
			"checksum": {Type: module.TypeBool, Default: true, Description: "compute sha256 of a regular file"},
		},
		ReadOnly: true,
		Output: map[string]module.Field{
			"path":   fileOutput["path"],
			"exists": outputField(module.TypeBool, "something is at path"),
			"type":   outputField(module.TypeString, "file, directory, symlink, fifo, socket, char_device or block_device; \"\" when absent"),
			"mode":   outputField(module.TypeString, `octal permission bits, e.g. "0644"`),
			"owner":  outputField(module.TypeString, "owner user name (the uid when it has none)"),
			"group":  outputField(module.TypeString, "group name (the gid when it has none)"),
			"uid":    outputField(module.TypeInt, "owner uid"),
			"gid":    outputField(module.TypeInt, "group gid"),
			"size":   outputField(module.TypeInt, "size in bytes"),
			"sha256": outputField(module.TypeString, "SHA-256 of a regular file's content, hex (\"\" otherwise)"),
			"mtime":  outputField(module.TypeInt, "modification time, Unix seconds"),
			"target": outputField(module.TypeString, "a symlink's target (\"\" otherwise)"),
		},
	}, fileStat)
}

// fileStat describes path; it never changes anything, so it also runs in
// check mode. A missing path (or a missing parent) is exists: false.
func fileStat(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	path, follow, checksum := a.str("path"), a.boolean("follow", false), a.boolean("checksum", true)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	data := map[string]any{"path": path, "exists": false, "type": "", "mode": "", "owner": "", "group": "",
		"uid": int64(-1), "gid": int64(-1), "size": int64(0), "sha256": "", "mtime": int64(0), "target": ""}
	if filepath.IsAbs(path) && filepath.Clean(path) == "/" {
		return domain.Result{}, fmt.Errorf("core.file.stat describes files and directories below /, not / itself")
	}
	t, err := fsOf(env).Open(path, safefs.Options{Follow: follow})
	if errors.Is(err, fs.ErrNotExist) {
		return converged(path+" does not exist", data), nil
	}
	if err != nil {
		return domain.Result{}, err
	}
	defer t.Close()
	fi, exists, err := t.Lstat()
	if err != nil {
		return domain.Result{}, err
	}
	if !exists {
		return converged(path+" does not exist", data), nil
	}
	data["exists"] = true
	data["type"] = fileType(fi.Mode)
	data["mode"] = formatMode(fi.Mode)
	data["uid"], data["gid"] = int64(fi.UID), int64(fi.GID)
	data["owner"], data["group"] = userName(fi.UID), groupName(fi.GID)
	data["size"] = fi.Size
	data["mtime"] = fi.ModTime.Unix()
	if fi.IsSymlink() {
		if data["target"], err = t.Readlink(); err != nil {
			return domain.Result{}, err
		}
	}
	if fi.IsRegular() && checksum {
		f, err := t.OpenRead()
		if err != nil {
			return domain.Result{}, err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return domain.Result{}, fmt.Errorf("reading %s: %w", path, err)
		}
		data["sha256"] = hex.EncodeToString(h.Sum(nil))
	}
	return converged(fmt.Sprintf("%s is a %s", path, data["type"]), data), nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "char_device"
	case m&fs.ModeDevice != 0:
		return "block_device"
	}
	return "other"
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return strconv.Itoa(gid)
}
