package core

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	register("core.file.directory", module.Schema{
		Summary: "Ensure a directory exists, with the given mode and owner (recursively with recurse: true)",
		Params: fileParams(withParams(timeParams("preserve"), map[string]module.Param{
			"recurse": {Type: module.TypeBool, Default: false, Description: "also give mode, owner and group to everything inside the directory (a file gets the same mode as the directories, as in Ansible); symlinks inside are never followed, only their owner is changed, and special files keep their mode. Times apply to the directory itself only"},
		})),
	}, fileDirectory)
}

// maxDiffEntries bounds the entries a recursive change lists in its diff.
const maxDiffEntries = 200

// describeKind names what is at a path for a message: its type and mode
// as Ansible shows them ("directory 0755"), not fs.FileMode's "d---------".
func describeKind(fi safefs.Info) string {
	return fileType(fi.Mode) + " " + formatMode(fi.Mode)
}

func fileDirectory(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	recurse := a.boolean("recurse", false)
	ft, err := parseFileTimes(a, "preserve")
	if err != nil {
		return domain.Result{}, err
	}
	w.makedirs = true // parents of a directory are created, as before
	t, _, fi, exists, err := statFile(env, w)
	if err != nil {
		return domain.Result{}, err
	}
	if t != nil {
		defer t.Close()
	}
	if exists && fi.IsSymlink() {
		return domain.Result{}, symlinkErr(w.path)
	}
	if exists && !fi.IsDir() {
		return domain.Result{}, fmt.Errorf("%s exists and is not a directory (%s)", w.path, describeKind(fi))
	}
	inW := w // the tree gets only what was asked, not the top's defaults
	if exists {
		w = w.forMode(fi.Mode, true)
	} else {
		w = w.forMode(0o755, true)
	}
	mode := w.mode
	if !w.hasMode {
		mode = 0o755
		if exists {
			mode = fi.Mode & permBits
		}
	}
	data := map[string]any{"path": w.path, "mode": formatMode(mode)}
	var changes []string
	var cur *safefs.Info
	if exists {
		changes = attrChanges(w, fi)
		cur = &fi
	} else {
		changes = []string{"create directory " + w.path + " mode " + formatMode(mode)}
	}
	atime, mtime, timeChanges := ft.resolve(cur, time.Now())
	changes = append(changes, timeChanges...)
	var inner []string
	if recurse && exists {
		if err := t.ChangeTree(treeVisit(inW, &inner), true); err != nil {
			return domain.Result{}, err
		}
		changes = append(changes, capLines(inner, maxDiffEntries)...)
	}
	if len(changes) == 0 {
		return converged(w.path+" is in the wanted state", data), nil
	}
	diff := strings.Join(changes, "\n") + "\n"
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have changed directory " + w.path, Data: data}, nil
	}
	w.mode, w.hasMode = mode, true
	if !exists {
		err = t.Mkdir(w.attrs())
	} else {
		err = t.SetAttrs(w.attrs())
	}
	if err != nil {
		return domain.Result{}, err
	}
	if len(inner) > 0 {
		var again []string
		if err := t.ChangeTree(treeVisit(inW, &again), false); err != nil {
			return domain.Result{}, err
		}
	}
	if atime != nil || mtime != nil {
		if err := t.SetTimes(atime, mtime); err != nil {
			return domain.Result{}, err
		}
	}
	msg := "changed directory " + w.path
	if len(inner) > 0 {
		msg += fmt.Sprintf(" and %d entries inside it", len(inner))
	}
	return domain.Result{Changed: true, Diff: diff, Msg: msg, Data: data}, nil
}

// treeVisit gives every entry below a directory the owner and mode of w
// (the top itself is left to fileDirectory) and appends a line to changes
// for each entry that differs. Only owner and group count for symlinks
// and special files, whose mode ChangeTree leaves alone.
func treeVisit(w fileWant, changes *[]string) safefs.TreeVisit {
	top := w.path
	return func(rel string, fi safefs.Info) safefs.Attrs {
		if rel == "" {
			return safefs.Attrs{UID: -1, GID: -1}
		}
		ww := w.forMode(fi.Mode, fi.IsDir())
		if !fi.IsDir() && !fi.IsRegular() {
			ww.hasMode = false
		}
		if c := attrChanges(ww, fi); len(c) > 0 {
			*changes = append(*changes, path.Join(top, rel)+": "+strings.Join(c, ", "))
		}
		return ww.attrs()
	}
}

// capLines keeps the first max lines and says how many were left out.
func capLines(lines []string, max int) []string {
	if len(lines) <= max {
		return lines
	}
	return append(lines[:max:max], fmt.Sprintf("... and %d more", len(lines)-max))
}
