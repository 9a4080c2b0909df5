package core

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	register("core.file.touched", module.Schema{
		Summary: "Ensure a file exists (created empty if missing) and update its times, like touch (Ansible's file state=touch)",
		Params: fileParams(withParams(timeParams("now"), map[string]module.Param{
			"makedirs": {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755)"},
		})),
		Output: map[string]module.Field{
			"path":    fileOutput["path"],
			"mode":    fileOutput["mode"],
			"created": outputField(module.TypeBool, "the file did not exist and was created (empty)"),
		},
	}, fileTouched)
}

// withParams merges parameter maps (later ones win).
func withParams(ms ...map[string]module.Param) map[string]module.Param {
	out := map[string]module.Param{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// fileTouched creates path empty when it is missing and sets its times:
// with the default "now" it changes on every run, as touch and Ansible
// do; with "preserve" (or a fixed time) it converges. An existing
// directory is touched too; a symlink needs follow: true.
func fileTouched(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	ft, err := parseFileTimes(a, "now")
	if err != nil {
		return domain.Result{}, err
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
	if exists && !fi.IsRegular() && !fi.IsDir() {
		return domain.Result{}, fmt.Errorf("%s exists and is a %s, not a file or a directory", w.path, fileType(fi.Mode))
	}
	if exists {
		w = w.forMode(fi.Mode, fi.IsDir())
	} else {
		w = w.forMode(0o644, false)
	}
	mode := w.mode
	if !w.hasMode {
		mode = 0o644
		if exists {
			mode = fi.Mode & permBits
		}
	}
	var changes []string
	var cur *safefs.Info
	if exists {
		changes = attrChanges(w, fi)
		cur = &fi
	} else {
		changes = []string{"create " + w.path + " (empty) mode " + formatMode(mode)}
	}
	atime, mtime, timeChanges := ft.resolve(cur, time.Now())
	changes = append(changes, timeChanges...)
	data := map[string]any{"path": w.path, "mode": formatMode(mode), "created": !exists}
	if len(changes) == 0 {
		return converged(w.path+" is in the wanted state", data), nil
	}
	diff := strings.Join(changes, "\n") + "\n"
	if env.Check {
		msg := "would have touched " + w.path
		if missingParent {
			msg += " (and created its parent directories)"
		}
		return domain.Result{Changed: true, Diff: diff, Msg: msg, Data: data}, nil
	}
	if !exists {
		if err := t.WriteFile(nil, mode, w.uid, w.gid); err != nil {
			return domain.Result{}, err
		}
	} else if err := t.SetAttrs(w.attrs()); err != nil {
		return domain.Result{}, err
	}
	if atime != nil || mtime != nil {
		if err := t.SetTimes(atime, mtime); err != nil {
			return domain.Result{}, err
		}
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "touched " + w.path, Data: data}, nil
}
