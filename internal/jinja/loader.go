package jinja

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/nikolalohinski/gonja/v2/loaders"
)

// fsLoader is gonja's view of the scenario or destiny files: the root
// template (its body after the header), and the templates it includes or
// imports, found as Ansible finds them: beside the root template, then
// under templates/, then at the root of the files. Paths never leave the
// files (no absolute paths, no "..").
type fsLoader struct {
	fsys fs.FS
	root string // the root template's path
	body string // the root template's body
	dirs []string
}

var _ loaders.Loader = (*fsLoader)(nil)

func newLoader(fsys fs.FS, root, body string) *fsLoader {
	dirs := []string{path.Dir(root)}
	for _, d := range []string{"templates", "."} {
		if d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	return &fsLoader{fsys: fsys, root: root, body: body, dirs: dirs}
}

// Read returns the body of the template at a resolved or relative path.
func (l *fsLoader) Read(name string) (io.Reader, error) {
	if err := checkStack(name); err != nil {
		return nil, err
	}
	if name == l.root {
		return strings.NewReader(l.body), nil
	}
	p, err := l.Resolve(name)
	if err != nil {
		return nil, err
	}
	b, err := fs.ReadFile(l.fsys, p)
	if err != nil {
		return nil, fmt.Errorf("reading template %s: %w", p, err)
	}
	return strings.NewReader(string(b)), nil
}

// Resolve finds name in the search path and returns its path in the files.
func (l *fsLoader) Resolve(name string) (string, error) {
	if name == l.root {
		return name, nil
	}
	clean := strings.TrimPrefix(name, "./")
	if !fs.ValidPath(clean) {
		return "", fmt.Errorf("template %q must be a path relative to the templates, without '..'", name)
	}
	for _, d := range l.dirs {
		p := path.Join(d, clean)
		if fi, err := fs.Stat(l.fsys, p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("template %s not found beside %s, in templates/ or at the root of the scenario or destiny directory", name, l.root)
}

// Inherit returns l: Ansible searches the same path from every template.
func (l *fsLoader) Inherit(string) (loaders.Loader, error) { return l, nil }
