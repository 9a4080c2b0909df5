package core

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// hardLink makes path another name of the regular file target (Ansible's
// file state=hard): a name that already is that file is converged, a
// symlink there is replaced, another file only with force, a directory
// never. Linking across filesystems fails before anything is done.
func hardLink(env *module.Env, w fileWant, target string, force bool) (domain.Result, error) {
	if !path.IsAbs(target) {
		target = path.Join(path.Dir(w.path), target)
	}
	src, err := fsOf(env).Open(target, safefs.Options{Follow: true})
	if errors.Is(err, fs.ErrNotExist) {
		return domain.Result{}, fmt.Errorf("target %s of the hard link %s does not exist", target, w.path)
	}
	if err != nil {
		return domain.Result{}, err
	}
	defer src.Close()
	sfi, ok, err := src.Lstat()
	if err != nil {
		return domain.Result{}, err
	}
	if !ok {
		return domain.Result{}, fmt.Errorf("target %s of the hard link %s does not exist", target, w.path)
	}
	if !sfi.IsRegular() {
		return domain.Result{}, fmt.Errorf("target %s of the hard link %s is a %s: only regular files are hard-linked", target, w.path, describeKind(sfi))
	}
	t, missingParent, fi, exists, err := statFile(env, w)
	if err != nil {
		return domain.Result{}, err
	}
	if t != nil {
		defer t.Close()
		if !t.DirInfo().SameDevice(sfi) {
			return domain.Result{}, fmt.Errorf("cannot hard-link %s to %s: %w; use a symlink (drop hard: true) or a copy", w.path, target, safefs.ErrCrossDevice)
		}
	}
	data := map[string]any{"path": w.path, "target": target, "previous": ""}
	var diff string
	switch {
	case exists && fi.IsSymlink():
		previous, err := t.Readlink()
		if err != nil {
			return domain.Result{}, err
		}
		data["previous"] = previous
		diff = fmt.Sprintf("--- %s -> %s (symlink)\n+++ %s => %s (hard link)\n", w.path, previous, w.path, target)
	case exists && fi.IsDir():
		return domain.Result{}, fmt.Errorf("%s is a directory; remove it first with core.file.absent to put a hard link there", w.path)
	case exists && fi.Same(sfi):
		return converged(fmt.Sprintf("%s already is a hard link to %s", w.path, target), data), nil
	case exists && !force:
		return domain.Result{}, fmt.Errorf("%s exists (%s) and is not a hard link to %s; set force: true to replace it", w.path, describeKind(fi), target)
	case exists:
		diff = fmt.Sprintf("--- %s (%s, %d bytes)\n+++ %s => %s (hard link)\n", w.path, describeKind(fi), fi.Size, w.path, target)
	default:
		diff = fmt.Sprintf("--- /dev/null\n+++ %s => %s (hard link)\n", w.path, target)
	}
	if env.Check {
		msg := "would have hard-linked " + w.path + " to " + target
		if missingParent {
			msg += " (and created its parent directories)"
		}
		return domain.Result{Changed: true, Diff: diff, Msg: msg, Data: data}, nil
	}
	if err := t.Hardlink(src); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "hard-linked " + w.path + " to " + target, Data: data}, nil
}
