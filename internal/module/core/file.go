package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func fileParams(extra map[string]module.Param) map[string]module.Param {
	p := map[string]module.Param{
		"path":  str(true, "absolute path of the file"),
		"mode":  str(false, `octal mode as a string, e.g. "0644"`),
		"owner": typed(module.TypeAny, "owner user name or numeric uid"),
		"group": typed(module.TypeAny, "group name or numeric gid"),
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func init() {
	register("core.file.present", module.Schema{
		Summary: "Ensure a file exists, with the given content, mode and owner",
		Params: fileParams(map[string]module.Param{
			"content":  str(false, "file content; omitted: the file is created empty if missing and its content left alone"),
			"makedirs": {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755)"},
		}),
	}, filePresent)
	register("core.file.rendered", module.Schema{
		Summary: "Render a template of the scenario or destiny into a file",
		Params: fileParams(map[string]module.Param{
			"template": str(true, "template path relative to the scenario or destiny directory"),
			"vars":     typed(module.TypeMap, "extra template data, merged over the task's data"),
			"makedirs": {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755)"},
		}),
	}, fileRendered)
	register("core.file.absent", module.Schema{
		Summary: "Ensure a file or directory (with its content) does not exist",
		Params:  map[string]module.Param{"path": str(true, "path to remove (a directory is removed with its content)")},
	}, fileAbsent)
	register("core.file.directory", module.Schema{
		Summary: "Ensure a directory exists, with the given mode and owner",
		Params:  fileParams(nil),
	}, fileDirectory)
}

// fileWant is the wanted state of one file or directory.
type fileWant struct {
	path       string // as given, for messages
	hp         string // on disk (confined)
	content    []byte
	hasContent bool
	mode       fs.FileMode
	hasMode    bool
	uid, gid   int // -1: leave alone
	makedirs   bool
}

func parseFileWant(env *module.Env, a *args) (fileWant, error) {
	w := fileWant{path: a.str("path"), makedirs: a.boolean("makedirs", false)}
	modeStr, owner, group := a.str("mode"), a.scalar("owner"), a.scalar("group")
	if a.has("content") {
		w.content, w.hasContent = []byte(a.str("content")), true
	}
	if a.err != nil {
		return w, a.err
	}
	var err error
	if w.hp, err = hostPath(env, w.path); err != nil {
		return w, err
	}
	if modeStr != "" {
		if w.mode, err = parseMode(modeStr); err != nil {
			return w, err
		}
		w.hasMode = true
	}
	if w.uid, err = lookupUID(owner); err != nil {
		return w, err
	}
	if w.gid, err = lookupGID(group); err != nil {
		return w, err
	}
	return w, nil
}

func filePresent(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	w, err := parseFileWant(env, newArgs(p))
	if err != nil {
		return domain.Result{}, err
	}
	return ensureFile(env, w)
}

// attrChanges lists how the mode and owner of an existing fi differ from w.
func attrChanges(w fileWant, fi fs.FileInfo) []string {
	var out []string
	if w.hasMode && fi.Mode()&permBits != w.mode {
		out = append(out, fmt.Sprintf("mode %s -> %s", formatMode(fi.Mode()), formatMode(w.mode)))
	}
	uid, gid := ownerOf(fi)
	if w.uid >= 0 && w.uid != uid {
		out = append(out, fmt.Sprintf("owner %d -> %d", uid, w.uid))
	}
	if w.gid >= 0 && w.gid != gid {
		out = append(out, fmt.Sprintf("group %d -> %d", gid, w.gid))
	}
	return out
}

// fixAttrs sets owner then mode where they differ. The mode is set again
// after a chown because chown clears the setuid and setgid bits.
func fixAttrs(hp string, w fileWant, fi fs.FileInfo) error {
	uid, gid := ownerOf(fi)
	chowned := false
	if (w.uid >= 0 && w.uid != uid) || (w.gid >= 0 && w.gid != gid) {
		if err := os.Chown(hp, w.uid, w.gid); err != nil {
			return fmt.Errorf("setting owner of %s: %w", hp, err)
		}
		chowned = true
	}
	mode := fi.Mode() & permBits
	if w.hasMode {
		mode = w.mode
	}
	if chowned || fi.Mode()&permBits != mode {
		if err := os.Chmod(hp, mode); err != nil {
			return fmt.Errorf("setting mode of %s: %w", hp, err)
		}
	}
	return nil
}

// ensureFile converges a regular file to w; it is shared by file.present,
// file.rendered and the sysctl persistence file.
func ensureFile(env *module.Env, w fileWant) (domain.Result, error) {
	hp, err := followLink(env, w.hp)
	if err != nil {
		return domain.Result{}, err
	}
	if isRootPath(env, hp) {
		return domain.Result{}, fmt.Errorf("%s is the root directory, not a file", w.path)
	}
	fi, err := os.Lstat(hp)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return domain.Result{}, fmt.Errorf("reading %s: %w", w.path, err)
	}
	if exists && !fi.Mode().IsRegular() {
		return domain.Result{}, fmt.Errorf("%s exists and is not a regular file (%s)", w.path, fi.Mode().Type())
	}
	var old []byte
	if exists {
		if old, err = os.ReadFile(hp); err != nil {
			return domain.Result{}, fmt.Errorf("reading %s: %w", w.path, err)
		}
	}
	content := old
	if w.hasContent {
		content = w.content
	}
	writeContent := !exists || !bytes.Equal(old, content)
	mode := w.mode
	if !w.hasMode {
		mode = 0o644
		if exists {
			mode = fi.Mode() & permBits
		}
	}
	var changes []string
	if exists {
		changes = attrChanges(w, fi)
	}
	sum := sha256.Sum256(content)
	data := map[string]any{"path": w.path, "size": int64(len(content)), "sha256": hex.EncodeToString(sum[:]), "mode": formatMode(mode)}
	if !writeContent && len(changes) == 0 {
		return converged(fmt.Sprintf("%s is in the wanted state", w.path), data), nil
	}

	oldName := w.path
	if !exists {
		oldName = "/dev/null"
		changes = append(changes, "create "+w.path+" mode "+formatMode(mode))
	}
	diff := strings.Join(changes, "\n") + "\n" + unifiedDiff(oldName, w.path, old, content)
	verb := "updated"
	if !exists {
		verb = "created"
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have " + verb + " " + w.path, Data: data}, nil
	}

	if !exists {
		if err := ensureParent(hp, w); err != nil {
			return domain.Result{}, err
		}
	}
	if writeContent {
		uid, gid := w.uid, w.gid
		if exists {
			cu, cg := ownerOf(fi)
			if uid < 0 {
				uid = cu
			}
			if gid < 0 {
				gid = cg
			}
		}
		if err := writeAtomic(hp, content, mode, uid, gid); err != nil {
			return domain.Result{}, err
		}
	} else if err := fixAttrs(hp, w, fi); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: verb + " " + w.path, Data: data}, nil
}

func ensureParent(hp string, w fileWant) error {
	dir := filepath.Dir(hp)
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("parent of %s is not a directory", w.path)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("checking parent directory of %s: %w", w.path, err)
	case !w.makedirs:
		return fmt.Errorf("parent directory %s of %s does not exist; create it with core.file.directory or set makedirs: true", filepath.Dir(w.path), w.path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating parent directories of %s: %w", w.path, err)
	}
	return nil
}

func fileAbsent(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	path := a.str("path")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	hp, err := hostPath(env, path)
	if err != nil {
		return domain.Result{}, err
	}
	if isRootPath(env, hp) {
		return domain.Result{}, fmt.Errorf("refusing to remove the root directory %s", path)
	}
	fi, err := os.Lstat(hp)
	if errors.Is(err, fs.ErrNotExist) {
		return converged(path+" is already absent", map[string]any{"path": path}), nil
	}
	if err != nil {
		return domain.Result{}, fmt.Errorf("reading %s: %w", path, err)
	}
	var diff string
	switch {
	case fi.IsDir():
		entries, _ := os.ReadDir(hp)
		diff = fmt.Sprintf("--- %s/ (directory, %d entries)\n+++ /dev/null\n", path, len(entries))
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(hp)
		diff = fmt.Sprintf("--- %s -> %s (symlink)\n+++ /dev/null\n", path, target)
	case fi.Mode().IsRegular() && fi.Size() <= diffMaxInput:
		old, err := os.ReadFile(hp)
		if err != nil {
			return domain.Result{}, fmt.Errorf("reading %s: %w", path, err)
		}
		diff = unifiedDiff(path, "/dev/null", old, nil)
		if len(old) == 0 {
			diff = fmt.Sprintf("--- %s (empty)\n+++ /dev/null\n", path)
		}
	default:
		diff = fmt.Sprintf("--- %s (%s, %d bytes)\n+++ /dev/null\n", path, fi.Mode().Type(), fi.Size())
	}
	data := map[string]any{"path": path}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have removed " + path, Data: data}, nil
	}
	if fi.IsDir() {
		err = os.RemoveAll(hp)
	} else {
		err = os.Remove(hp)
	}
	if err != nil {
		return domain.Result{}, fmt.Errorf("removing %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(hp)); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "removed " + path, Data: data}, nil
}

func fileDirectory(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	w, err := parseFileWant(env, newArgs(p))
	if err != nil {
		return domain.Result{}, err
	}
	hp, err := followLink(env, w.hp)
	if err != nil {
		return domain.Result{}, err
	}
	fi, err := os.Lstat(hp)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return domain.Result{}, fmt.Errorf("reading %s: %w", w.path, err)
	}
	if exists && !fi.IsDir() {
		return domain.Result{}, fmt.Errorf("%s exists and is not a directory (%s)", w.path, fi.Mode().Type())
	}
	mode := w.mode
	if !w.hasMode {
		mode = 0o755
		if exists {
			mode = fi.Mode() & permBits
		}
	}
	data := map[string]any{"path": w.path, "mode": formatMode(mode)}
	var changes []string
	if exists {
		changes = attrChanges(w, fi)
	} else {
		changes = []string{"create directory " + w.path + " mode " + formatMode(mode)}
	}
	if len(changes) == 0 {
		return converged(w.path+" is in the wanted state", data), nil
	}
	diff := strings.Join(changes, "\n") + "\n"
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have changed directory " + w.path, Data: data}, nil
	}
	if !exists {
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			return domain.Result{}, fmt.Errorf("creating parents of %s: %w", w.path, err)
		}
		if err := os.Mkdir(hp, 0o700); err != nil {
			return domain.Result{}, fmt.Errorf("creating %s: %w", w.path, err)
		}
		if fi, err = os.Lstat(hp); err != nil {
			return domain.Result{}, fmt.Errorf("reading %s: %w", w.path, err)
		}
		// Mkdir's mode is filtered by the umask; set it explicitly.
		w.mode, w.hasMode = mode, true
	}
	if err := fixAttrs(hp, w, fi); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "changed directory " + w.path, Data: data}, nil
}
