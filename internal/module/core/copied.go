package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	register("core.file.copied", module.Schema{
		Summary: "Copy a file or a directory tree of the scenario's or destiny's files/ directory (or, with remote_src, of the host) to the host, byte for byte",
		Params: fileParams(map[string]module.Param{
			"src": str(true, "path of the source under the scenario's or destiny's files/ directory (shipped with the task); with remote_src: an absolute path on the host. "+
				"A directory is copied with its tree: `dir/` (trailing slash) copies its content into path, `dir` copies the directory itself into path/dir, as Ansible's copy does. "+
				"Only regular files of files/ are shipped: symlinks in the repository's files/ are not (there is no local_follow)"),
			"sha256":         str(false, "expected SHA-256 of the source, hex: a different source fails the task before anything is written (a single file only)"),
			"makedirs":       {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755)"},
			"validate":       validateParam,
			"backup":         backupParam,
			"remote_src":     {Type: module.TypeBool, Default: false, Description: "src is a path on the host, read through the same safe-path rules as every write (a symlink planted by a user does not make root read a file that user could not); symlinks inside a host tree are copied as symlinks, never followed"},
			"force":          {Type: module.TypeBool, Default: true, Description: "replace a file whose content differs; false: a file that exists at the destination is left alone (content, mode and owner), only missing ones are copied"},
			"directory_mode": str(false, `octal mode of the directories a tree copy creates, e.g. "0755" (the default); directories that already exist keep theirs`),
		}),
		Output: withFields(fileOutput, map[string]module.Field{
			"src":   outputField(module.TypeString, "the source, relative to files/ (or the host path with remote_src)"),
			"files": outputField(module.TypeInt, "number of files (and symlinks) of the source"),
		}),
	}, fileCopied)
}

// copySpec is one core.file.copied call, parsed.
type copySpec struct {
	w         fileWant
	src       string // clean: relative to files/, or absolute on the host
	contents  bool   // src ended with "/": copy the directory's content
	remote    bool
	force     bool
	pin       string
	dirMode   fs.FileMode
	toDirPath bool // path ended with "/": copy into it
}

func parseCopy(a *args) (copySpec, error) {
	src := a.str("src")
	c := copySpec{remote: a.boolean("remote_src", false), force: a.boolean("force", true), pin: strings.ToLower(a.str("sha256")), dirMode: 0o755}
	dm := a.str("directory_mode")
	c.toDirPath = strings.HasSuffix(a.str("path"), "/")
	w, err := parseFileWant(a)
	if err != nil {
		return c, err
	}
	c.w = w
	if dm != "" {
		if c.dirMode, err = parseMode(dm); err != nil {
			return c, fmt.Errorf("param \"directory_mode\": %w", err)
		}
	}
	c.contents = strings.HasSuffix(src, "/")
	if c.remote {
		if !path.IsAbs(src) {
			return c, fmt.Errorf("param \"src\": %q must be an absolute path on the host with remote_src: true", src)
		}
		c.src = path.Clean(src)
		return c, nil
	}
	clean := path.Clean(strings.TrimPrefix(src, "./"))
	if src == "" || path.IsAbs(src) || !fs.ValidPath(clean) {
		return c, fmt.Errorf("param \"src\": %q must be a path relative to the files/ directory, without '..' (or set remote_src: true for a path on the host)", src)
	}
	c.src = clean
	return c, nil
}

// fileCopied converges path to the bytes of files/<src> (or of the host's
// src) like file.present; a directory src is copied as a tree.
func fileCopied(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	c, err := parseCopy(newArgs(p))
	if err != nil {
		return domain.Result{}, err
	}
	src, err := openCopySource(env, c)
	if err != nil {
		return domain.Result{}, err
	}
	defer src.close()
	if src.isDir {
		if c.pin != "" {
			return domain.Result{}, fmt.Errorf("param \"sha256\" pins one file; src %s is a directory", c.src)
		}
		return copyTree(ctx, env, c, src)
	}
	data, err := src.read("")
	if err != nil {
		return domain.Result{}, err
	}
	if c.pin != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != c.pin {
			return domain.Result{}, fmt.Errorf("src %s has sha256 %s, not the pinned %s; nothing was written", src.name(""), got, c.pin)
		}
	}
	w := c.w
	if into, err := copiesInto(env, c); err != nil {
		return domain.Result{}, err
	} else if into {
		// A destination ending with "/" is a directory, created when
		// missing (with its parents), as in Ansible.
		w.path, w.makedirs = path.Join(w.path, path.Base(c.src)), w.makedirs || c.toDirPath
	}
	w.content, w.hasContent = data, true
	res, err := copyOne(ctx, env, c, w)
	if res.Data != nil {
		res.Data["src"], res.Data["files"] = c.src, int64(1)
	}
	return res, err
}

// copiesInto reports whether a single file is copied into path rather
// than onto it: path ends with "/" or is an existing directory (Ansible).
func copiesInto(env *module.Env, c copySpec) (bool, error) {
	if c.toDirPath {
		return true, nil
	}
	t, err := fsOf(env).Open(c.w.path, safefs.Options{Follow: c.w.follow})
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer t.Close()
	fi, ok, err := t.Lstat()
	return ok && fi.IsDir(), err
}

// copyOne converges one destination file; with force: false an existing
// file is left as it is.
func copyOne(ctx context.Context, env *module.Env, c copySpec, w fileWant) (domain.Result, error) {
	if !c.force {
		t, err := fsOf(env).Open(w.path, safefs.Options{Follow: w.follow})
		if err == nil {
			_, exists, err := t.Lstat()
			t.Close()
			if err != nil {
				return domain.Result{}, err
			}
			if exists {
				return converged(w.path+" exists and force is false: left alone", map[string]any{"path": w.path}), nil
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return domain.Result{}, err
		}
	}
	return ensureFile(ctx, env, w)
}
