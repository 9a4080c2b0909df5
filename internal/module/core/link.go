package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	register("core.file.link", module.Schema{
		Summary: "Ensure a symlink (or, with hard: true, a hard link) exists and points at a target",
		Params: map[string]module.Param{
			"path":     str(true, "absolute path of the symlink"),
			"target":   str(true, "what the link points at (absolute, or relative to the link's directory), written as given"),
			"force":    {Type: module.TypeBool, Default: false, Description: "replace a regular file at path (for a hard link: a file that is not already the target), and allow a symlink's target that does not exist"},
			"hard":     {Type: module.TypeBool, Default: false, Description: "make a hard link (Ansible's state=hard): path becomes another name of the regular file target, which must exist on the same filesystem; a symlink at target is followed (under the safe-path rules)"},
			"makedirs": {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755)"},
		},
		Output: map[string]module.Field{
			"path":     fileOutput["path"],
			"target":   outputField(module.TypeString, "the link's target"),
			"previous": outputField(module.TypeString, `the target the link had before, "" when there was none`),
		},
	}, fileLink)
}

// fileLink makes path a symlink to target, atomically (a new link renamed
// over the old one). A symlink pointing elsewhere is replaced; a regular
// file only with force; a directory never.
func fileLink(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	w := fileWant{path: a.str("path"), makedirs: a.boolean("makedirs", false)}
	target, force, hard := a.str("target"), a.boolean("force", false), a.boolean("hard", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if !filepath.IsAbs(w.path) {
		return domain.Result{}, fmt.Errorf("path %q must be absolute", w.path)
	}
	if target == "" {
		return domain.Result{}, errors.New("param \"target\" must not be empty")
	}
	if hard {
		return hardLink(env, w, target, force)
	}
	t, missingParent, fi, exists, err := statFile(env, w)
	if err != nil {
		return domain.Result{}, err
	}
	if t != nil {
		defer t.Close()
	}
	previous := ""
	switch {
	case exists && fi.IsSymlink():
		if previous, err = t.Readlink(); err != nil {
			return domain.Result{}, err
		}
	case exists && fi.IsDir():
		return domain.Result{}, fmt.Errorf("%s is a directory; remove it first with core.file.absent to put a link there", w.path)
	case exists && !force:
		return domain.Result{}, fmt.Errorf("%s exists and is not a symlink (%s); set force: true to replace it", w.path, describeKind(fi))
	}
	data := map[string]any{"path": w.path, "target": target, "previous": previous}
	if previous == target {
		return converged(fmt.Sprintf("%s already points at %s", w.path, target), data), nil
	}
	if !force && !linkTargetExists(env, w.path, target) {
		return domain.Result{}, fmt.Errorf("target %s of %s does not exist; set force: true to create a dangling link", target, w.path)
	}
	var diff string
	switch {
	case previous != "":
		diff = fmt.Sprintf("--- %s -> %s\n+++ %s -> %s\n", w.path, previous, w.path, target)
	case exists:
		diff = fmt.Sprintf("--- %s (%s, %d bytes)\n+++ %s -> %s\n", w.path, describeKind(fi), fi.Size, w.path, target)
	default:
		diff = fmt.Sprintf("--- /dev/null\n+++ %s -> %s\n", w.path, target)
	}
	if env.Check {
		msg := "would have linked " + w.path + " to " + target
		if missingParent {
			msg += " (and created its parent directories)"
		}
		return domain.Result{Changed: true, Diff: diff, Msg: msg, Data: data}, nil
	}
	if err := t.Symlink(target); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "linked " + w.path + " to " + target, Data: data}, nil
}

// linkTargetExists reports whether target, read from a link at linkPath,
// leads to something (resolved like every module path, under the root).
func linkTargetExists(env *module.Env, linkPath, target string) bool {
	if !path.IsAbs(target) {
		target = path.Join(path.Dir(linkPath), target)
	}
	t, err := fsOf(env).Open(target, safefs.Options{Follow: true})
	if err != nil {
		return false
	}
	defer t.Close()
	_, ok, err := t.Lstat()
	return err == nil && ok && !errors.Is(err, fs.ErrNotExist)
}
