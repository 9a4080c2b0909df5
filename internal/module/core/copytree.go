package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// copySource is what core.file.copied reads: the bundle's files/ (shipped
// with the task) or, with remote_src, the host through safefs.
type copySource struct {
	env   *module.Env
	c     copySpec
	isDir bool
	top   *safefs.Target // remote: the resolved src
	vtop  string         // remote: its path as the (confined) host sees it
}

func openCopySource(env *module.Env, c copySpec) (*copySource, error) {
	s := &copySource{env: env, c: c}
	if !c.remote {
		if env.Files == nil {
			return nil, fmt.Errorf("src %s: no bundle files are available to this task (core.file.copied runs inside a scenario or destiny; set remote_src: true for a path on the host)", c.src)
		}
		fi, err := fs.Stat(env.Files, s.name(""))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("src files/%s not found in the scenario or destiny directory", c.src)
		}
		if err != nil {
			return nil, fmt.Errorf("reading src files/%s: %w", c.src, err)
		}
		s.isDir = fi.IsDir()
		return s, nil
	}
	t, err := fsOf(env).Open(c.src, safefs.Options{Follow: true})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("src %s does not exist on the host", c.src)
	}
	if err != nil {
		return nil, fmt.Errorf("src: %w", err)
	}
	fi, ok, err := t.Lstat()
	if err == nil && !ok {
		err = fmt.Errorf("src %s does not exist on the host", c.src)
	}
	if err == nil && !fi.IsDir() && !fi.IsRegular() {
		err = fmt.Errorf("src %s is a %s: only files and directories are copied", c.src, describeKind(fi))
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	s.top, s.vtop, s.isDir = t, t.VPath(), fi.IsDir()
	return s, nil
}

func (s *copySource) close() {
	if s.top != nil {
		s.top.Close()
	}
}

// name is where entry rel of the source is, for fs.FS reads and messages.
func (s *copySource) name(rel string) string {
	if s.c.remote {
		return path.Join(s.vtop, rel)
	}
	return path.Join("files", s.c.src, rel)
}

// read returns the content of the source file rel ("" for src itself).
func (s *copySource) read(rel string) ([]byte, error) {
	if !s.c.remote {
		data, err := fs.ReadFile(s.env.Files, s.name(rel))
		if err != nil {
			return nil, fmt.Errorf("reading src %s: %w", s.name(rel), err)
		}
		return data, nil
	}
	t := s.top
	if rel != "" {
		var err error
		if t, err = fsOf(s.env).Open(s.name(rel), safefs.Options{}); err != nil {
			return nil, fmt.Errorf("src: %w", err)
		}
		defer t.Close()
	}
	data, err := t.ReadFile(0)
	if err != nil {
		return nil, fmt.Errorf("reading src: %w", err)
	}
	return data, nil
}

// copyEntry is one entry of a source tree.
type copyEntry struct {
	rel    string
	kind   string // "directory", "file" or "symlink"
	target string // a symlink's target
}

// entries lists the source tree in walk order (a directory before its
// content), the top directory first with rel "".
func (s *copySource) entries() ([]copyEntry, error) {
	var out []copyEntry
	if !s.c.remote {
		top := s.name("")
		err := fs.WalkDir(s.env.Files, top, func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(name, top), "/")
			switch {
			case d.IsDir():
				out = append(out, copyEntry{rel: rel, kind: "directory"})
			case d.Type().IsRegular():
				out = append(out, copyEntry{rel: rel, kind: "file"})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading src %s: %w", top, err)
		}
		return out, nil
	}
	var bad error
	err := s.top.ChangeTree(func(rel string, fi safefs.Info) safefs.Attrs {
		switch {
		case fi.IsDir():
			out = append(out, copyEntry{rel: rel, kind: "directory"})
		case fi.IsRegular():
			out = append(out, copyEntry{rel: rel, kind: "file"})
		case fi.IsSymlink():
			out = append(out, copyEntry{rel: rel, kind: "symlink"})
		case bad == nil:
			bad = fmt.Errorf("src %s is a %s: only files, directories and symlinks are copied", s.name(rel), describeKind(fi))
		}
		return safefs.Attrs{UID: -1, GID: -1}
	}, true)
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, fmt.Errorf("walking src: %w", err)
	}
	for i, e := range out {
		if e.kind != "symlink" {
			continue
		}
		t, err := fsOf(s.env).Open(s.name(e.rel), safefs.Options{})
		if err != nil {
			return nil, fmt.Errorf("src: %w", err)
		}
		out[i].target, err = t.Readlink()
		t.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// copyTree copies a source directory: src/ copies its content into path,
// src copies the directory itself to path/<base of src> (Ansible's rule).
// Directories it creates get directory_mode, files the module's mode,
// both its owner and group; nothing at the destination is removed.
func copyTree(ctx context.Context, env *module.Env, c copySpec, src *copySource) (domain.Result, error) {
	base := c.w.path
	if !c.contents && c.src != "." {
		base = path.Join(base, path.Base(c.src))
	}
	entries, err := src.entries()
	if err != nil {
		return domain.Result{}, err
	}
	var diffs []string
	changed, files := 0, int64(0)
	for _, e := range entries {
		dest := path.Join(base, e.rel)
		var res domain.Result
		switch e.kind {
		case "directory":
			res, err = copyDir(env, c, dest)
		case "symlink":
			files++
			res, err = copyLink(env, c, dest, e.target)
		default:
			files++
			w := c.w
			w.path, w.makedirs = dest, true
			if w.content, err = src.read(e.rel); err == nil {
				w.hasContent = true
				res, err = copyOne(ctx, env, c, w)
			}
		}
		if err != nil {
			return domain.Result{}, err
		}
		if res.Failed {
			return res, nil
		}
		if res.Changed {
			changed++
			diffs = append(diffs, strings.TrimSuffix(res.Diff, "\n"))
		}
	}
	data := map[string]any{"path": base, "src": c.src, "files": files, "mode": formatMode(c.dirMode)}
	if changed == 0 {
		return converged(fmt.Sprintf("%s is in the wanted state (%d files)", base, files), data), nil
	}
	verb := "copied"
	if env.Check {
		verb = "would have copied"
	}
	diff := strings.Join(capLines(diffs, maxDiffEntries), "\n") + "\n"
	return domain.Result{Changed: true, Diff: diff, Data: data,
		Msg: fmt.Sprintf("%s %s to %s (%d of %d entries changed)", verb, src.name(""), base, changed, len(entries))}, nil
}

// copyDir makes sure dest is a directory: created with directory_mode and
// the module's owner and group; an existing one gets only owner and group.
func copyDir(env *module.Env, c copySpec, dest string) (domain.Result, error) {
	// Missing parents of the destination are created (0755), as Ansible
	// creates the destination of a directory copy.
	w := fileWant{path: dest, uid: c.w.uid, gid: c.w.gid, makedirs: true}
	t, _, fi, exists, err := statFile(env, w)
	if err != nil {
		return domain.Result{}, err
	}
	if t != nil {
		defer t.Close()
	}
	if exists && fi.IsSymlink() {
		return domain.Result{}, symlinkErr(dest)
	}
	if exists && !fi.IsDir() {
		return domain.Result{}, fmt.Errorf("%s exists and is not a directory (%s): the tree cannot be copied there", dest, describeKind(fi))
	}
	var diff string
	if exists {
		if ch := attrChanges(w, fi); len(ch) > 0 {
			diff = dest + ": " + strings.Join(ch, ", ") + "\n"
		}
	} else {
		diff = "create directory " + dest + " mode " + formatMode(c.dirMode) + "\n"
	}
	if diff == "" {
		return domain.Result{}, nil
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff}, nil
	}
	w.mode, w.hasMode = c.dirMode, !exists
	if exists {
		err = t.SetAttrs(w.attrs())
	} else {
		err = t.Mkdir(w.attrs())
	}
	if err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff}, nil
}

// copyLink recreates a symlink of a host tree: the same target text. A
// symlink pointing elsewhere is replaced; a file only with force; a
// directory never.
func copyLink(env *module.Env, c copySpec, dest, target string) (domain.Result, error) {
	t, _, fi, exists, err := statFile(env, fileWant{path: dest, makedirs: true})
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
		if previous == target || !c.force {
			return domain.Result{}, nil
		}
	case exists && fi.IsDir():
		return domain.Result{}, fmt.Errorf("%s is a directory where the source has a symlink to %s", dest, target)
	case exists && !c.force:
		return domain.Result{}, nil
	}
	diff := fmt.Sprintf("%s -> %s (symlink)\n", dest, target)
	if previous != "" {
		diff = fmt.Sprintf("%s -> %s, was -> %s (symlink)\n", dest, target, previous)
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff}, nil
	}
	if err := t.Symlink(target); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff}, nil
}
