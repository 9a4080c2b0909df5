package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func fileParams(extra map[string]module.Param) map[string]module.Param {
	p := map[string]module.Param{
		"path":   str(true, "absolute path of the file"),
		"mode":   str(false, `octal mode as a string, e.g. "0644", or a symbolic one as chmod and Ansible take it, e.g. "u=rwX,g=rX,o=" (X: execute for directories and for files that already have an execute bit)`),
		"owner":  typed(module.TypeAny, "owner user name or numeric uid"),
		"group":  typed(module.TypeAny, "group name or numeric gid"),
		"follow": {Type: module.TypeBool, Default: false, Description: "write through a symlink at path (its target must be safe to reach); without it a symlink there fails with \"path is a symlink\""},
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
			"validate": validateParam,
			"backup":   backupParam,
		}),
	}, filePresent)
	register("core.file.rendered", module.Schema{
		Summary: "Render a template of the scenario or destiny into a file",
		Params: fileParams(jinjaParams(map[string]module.Param{
			"template": str(true, "template path relative to the scenario or destiny directory"),
			"vars":     typed(module.TypeMap, "extra template data, merged over the task's data"),
			"makedirs": {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755)"},
			"validate": validateParam,
			"backup":   backupParam,
		})),
	}, fileRendered)
	register("core.file.absent", module.Schema{
		Summary: "Ensure a file or directory (with its content) does not exist",
		Params:  map[string]module.Param{"path": str(true, "path to remove (a directory is removed with its content; a symlink is removed, never its target)")},
	}, fileAbsent)
}

// fileWant is the wanted state of one file or directory.
type fileWant struct {
	path       string // as given, for messages
	content    []byte
	hasContent bool
	// edit, when set, computes the content from the current one (nil and
	// exists false when there is no file): line, block and replace.
	edit func(old []byte, exists bool) ([]byte, error)
	// missingOK, when set, is the message of a converged result for a
	// file that does not exist (an editor with nothing to remove).
	missingOK string
	mode      fs.FileMode
	hasMode   bool
	// symbolic, when set, computes mode from the current one (forMode).
	symbolic symbolicMode
	uid, gid int // -1: leave alone
	makedirs bool
	follow   bool
	validate string
	backup   bool // keep a copy of the old content (backup.go)
}

func parseFileWant(a *args) (fileWant, error) {
	w := fileWant{path: a.str("path"), makedirs: a.boolean("makedirs", false), follow: a.boolean("follow", false), validate: a.str("validate"), backup: a.boolean("backup", false)}
	modeStr, owner, group := a.str("mode"), a.scalar("owner"), a.scalar("group")
	if a.has("content") {
		w.content, w.hasContent = []byte(a.str("content")), true
	}
	if a.err != nil {
		return w, a.err
	}
	if !filepath.IsAbs(w.path) {
		return w, fmt.Errorf("path %q must be absolute", w.path)
	}
	if err := checkValidate(w.validate); err != nil {
		return w, err
	}
	var err error
	if isSymbolicMode(modeStr) {
		if w.symbolic, err = parseSymbolicMode(modeStr); err != nil {
			return w, err
		}
		w.hasMode = true
	} else if modeStr != "" {
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

func filePresent(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	w, err := parseFileWant(newArgs(p))
	if err != nil {
		return domain.Result{}, err
	}
	return ensureFile(ctx, env, w)
}

// attrChanges lists how the mode and owner of an existing file differ from w.
func attrChanges(w fileWant, fi safefs.Info) []string {
	var out []string
	if w.hasMode && fi.Mode&permBits != w.mode {
		out = append(out, fmt.Sprintf("mode %s -> %s", formatMode(fi.Mode), formatMode(w.mode)))
	}
	if w.uid >= 0 && w.uid != fi.UID {
		out = append(out, fmt.Sprintf("owner %d -> %d", fi.UID, w.uid))
	}
	if w.gid >= 0 && w.gid != fi.GID {
		out = append(out, fmt.Sprintf("group %d -> %d", fi.GID, w.gid))
	}
	return out
}

func (w fileWant) attrs() safefs.Attrs {
	a := safefs.Attrs{UID: w.uid, GID: w.gid}
	if w.hasMode {
		m := w.mode
		a.Mode = &m
	}
	return a
}

// openFile resolves w.path for a file module. A missing parent directory
// is created only with makedirs and outside check mode; missingParent
// reports it so check mode can say it would create it.
func openFile(env *module.Env, w fileWant) (t *safefs.Target, missingParent bool, err error) {
	fsys := fsOf(env)
	t, err = fsys.Open(w.path, safefs.Options{Follow: w.follow})
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return t, false, err
	}
	if w.missingOK != "" {
		return nil, false, nil // nothing to remove in a directory that is not there
	}
	if !w.makedirs {
		return nil, false, fmt.Errorf("parent directory %s of %s does not exist; create it with core.file.directory or set makedirs: true", filepath.Dir(w.path), w.path)
	}
	if env.Check {
		return nil, true, nil
	}
	t, err = fsys.Open(w.path, safefs.Options{Follow: w.follow, MakeDirs: true})
	return t, false, err
}

// symlinkErr is the error for a symlink at a path a module does not follow.
func symlinkErr(path string) error {
	return fmt.Errorf("%s: %w; set follow: true to write through it, or remove it with core.file.absent", path, safefs.ErrSymlink)
}

// statFile opens w's target (nil, with missingParent, when its parent is
// missing and may be created) and reads what is at the path. The caller
// closes t when it is not nil.
func statFile(env *module.Env, w fileWant) (t *safefs.Target, missingParent bool, fi safefs.Info, exists bool, err error) {
	if t, missingParent, err = openFile(env, w); err != nil || t == nil {
		return t, missingParent, fi, false, err
	}
	if fi, exists, err = t.Lstat(); err != nil {
		t.Close()
		return nil, false, fi, false, err
	}
	return t, missingParent, fi, exists, nil
}

// ensureFile converges a regular file to w; it is shared by file.present,
// file.rendered, the line/block/replace editors and the sysctl
// persistence file.
func ensureFile(ctx context.Context, env *module.Env, w fileWant) (domain.Result, error) {
	if w.validate != "" && env.InKeeper {
		return domain.Result{}, fmt.Errorf("validate runs a program, which never happens inside the Keeper (on: keeper): target souls instead, or drop validate")
	}
	t, missingParent, fi, exists, err := statFile(env, w)
	if err != nil {
		return domain.Result{}, err
	}
	if t != nil {
		defer t.Close()
	}
	if exists && fi.IsSymlink() {
		return domain.Result{}, symlinkErr(w.path)
	}
	if exists && !fi.IsRegular() {
		return domain.Result{}, fmt.Errorf("%s exists and is not a regular file (%s)", w.path, describeKind(fi))
	}
	if exists {
		w = w.forMode(fi.Mode, false)
	} else {
		w = w.forMode(0o644, false)
	}
	if !exists && w.missingOK != "" {
		return converged(w.missingOK, map[string]any{"path": w.path}), nil
	}
	var old []byte
	if exists {
		if old, err = t.ReadFile(0); err != nil {
			return domain.Result{}, err
		}
	}
	content := old
	switch {
	case w.edit != nil:
		if content, err = w.edit(old, exists); err != nil {
			return domain.Result{}, err
		}
	case w.hasContent:
		content = w.content
	}
	writeContent := !exists || !bytes.Equal(old, content)
	mode := w.mode
	if !w.hasMode {
		mode = 0o644
		if exists {
			mode = fi.Mode & permBits
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
		msg := "would have " + verb + " " + w.path
		if missingParent {
			msg += " (and its parent directories)"
		}
		if w.validate != "" && writeContent {
			msg += "; validate is not run in check mode"
		}
		return domain.Result{Changed: true, Diff: diff, Msg: msg, Data: data}, nil
	}
	if writeContent && w.validate != "" {
		if res, ok := runValidate(ctx, w.validate, w.path, content); !ok {
			res.Diff, res.Data = diff, data
			return res, nil
		}
	}
	if writeContent {
		uid, gid := w.uid, w.gid
		if exists {
			if uid < 0 {
				uid = fi.UID
			}
			if gid < 0 {
				gid = fi.GID
			}
		}
		if exists && w.backup {
			name, err := writeBackup(env, w.path, old, fi)
			if err != nil {
				return domain.Result{}, err
			}
			data["backup_file"] = name
		}
		if err := t.WriteFile(content, mode, uid, gid); err != nil {
			return domain.Result{}, err
		}
	} else if err := t.SetAttrs(w.attrs()); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: verb + " " + w.path, Data: data}, nil
}

func fileAbsent(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	path := a.str("path")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if filepath.IsAbs(path) && filepath.Clean(path) == "/" {
		return domain.Result{}, fmt.Errorf("refusing to remove the root directory %s", path)
	}
	t, err := fsOf(env).Open(path, safefs.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return converged(path+" is already absent", map[string]any{"path": path}), nil
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
		return converged(path+" is already absent", map[string]any{"path": path}), nil
	}
	var diff string
	switch {
	case fi.IsDir():
		diff = fmt.Sprintf("--- %s/ (directory)\n+++ /dev/null\n", path)
	case fi.IsSymlink():
		target, _ := t.Readlink()
		diff = fmt.Sprintf("--- %s -> %s (symlink)\n+++ /dev/null\n", path, target)
	case fi.IsRegular() && fi.Size <= diffMaxInput:
		old, err := t.ReadFile(diffMaxInput)
		if errors.Is(err, safefs.ErrUnsafe) {
			// A planted hard link: removing the name is safe, showing
			// the content is not.
			diff = fmt.Sprintf("--- %s (hard link, %d bytes)\n+++ /dev/null\n", path, fi.Size)
			break
		}
		if err != nil {
			return domain.Result{}, err
		}
		diff = unifiedDiff(path, "/dev/null", old, nil)
		if len(old) == 0 {
			diff = fmt.Sprintf("--- %s (empty)\n+++ /dev/null\n", path)
		}
	default:
		diff = fmt.Sprintf("--- %s (%s, %d bytes)\n+++ /dev/null\n", path, describeKind(fi), fi.Size)
	}
	data := map[string]any{"path": path}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have removed " + path, Data: data}, nil
	}
	if err := t.Remove(); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "removed " + path, Data: data}, nil
}
