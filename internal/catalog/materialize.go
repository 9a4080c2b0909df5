package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/soulstack/soulstack/internal/domain"
)

// treeDir is where the tree of a service at a commit is materialized.
func (c *Catalog) treeDir(name, commit string) string {
	return filepath.Join(c.cfg.Dir, name, commit)
}

// materialize writes the tree of commit into <dir>/<name>/<commit>/ unless
// it is already there: into a temporary directory first, renamed into place
// when complete, so a reader never sees half a tree and a crash leaves only
// a temporary directory behind.
func (c *Catalog) materialize(ctx context.Context, repo *git.Repository, name string, commit plumbing.Hash) (string, error) {
	dst := c.treeDir(name, commit.String())
	if isDir(dst) {
		return dst, nil
	}
	unlock := c.lock("tree:" + dst)
	defer func() { unlock() }()
	if isDir(dst) {
		return dst, nil
	}
	co, err := repo.CommitObject(commit)
	if err != nil {
		return "", &domain.Error{Code: domain.CodeUnprocessable, Message: fmt.Sprintf("commit %s is not a commit", commit), Err: err}
	}
	tree, err := co.Tree()
	if err != nil {
		return "", fmt.Errorf("reading tree of %s: %w", commit, err)
	}
	if err := checkTreePaths(repo, tree, ""); err != nil {
		return "", err
	}
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-"+commit.String()[:12]+"-")
	if err != nil {
		return "", fmt.Errorf("creating temporary tree: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	var links []string
	var size int64
	err = tree.Files().ForEach(func(f *object.File) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if size += f.Size; size > c.cfg.MaxTreeBytes {
			return c.treeTooLarge(name, commit, size)
		}
		if f.Mode == filemode.Symlink {
			links = append(links, f.Name)
		}
		return writeFile(tmp, f)
	})
	if err == nil {
		err = checkLinks(tmp, links)
	}
	if errors.As(err, new(treeSizeError)) {
		_ = os.RemoveAll(tmp)
		_ = os.Remove(parent) // a refused first tree leaves no empty service directory
		return "", &domain.Error{Code: domain.CodeUnprocessable, Message: err.Error(), Err: err}
	}
	if err != nil {
		return "", fmt.Errorf("materializing %s at %s: %w", name, commit, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("materializing %s at %s: %w", name, commit, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		if isDir(dst) { // another keeper process won the race
			return dst, nil
		}
		return "", fmt.Errorf("materializing %s at %s: %w", name, commit, err)
	}
	unlock() // Collect takes tree locks itself
	unlock = func() {}
	c.collectAfter(ctx, name, commit.String())
	return dst, nil
}

// writeFile writes one blob of the tree under root. Paths must stay inside
// root; symlinks must be relative and point inside the tree.
func writeFile(root string, f *object.File) error {
	if !filepath.IsLocal(filepath.FromSlash(f.Name)) {
		return &domain.Error{Code: domain.CodeInvalid, Message: fmt.Sprintf("repository path %q escapes the repository", f.Name)}
	}
	p := filepath.Join(root, filepath.FromSlash(f.Name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	switch f.Mode {
	case filemode.Symlink:
		target, err := f.Contents()
		if err != nil {
			return err
		}
		resolved := path.Join(path.Dir(f.Name), target)
		if path.IsAbs(target) || !filepath.IsLocal(filepath.FromSlash(resolved)) {
			return &domain.Error{Code: domain.CodeInvalid,
				Message: fmt.Sprintf("symlink %s points outside the repository (%s): only relative links inside it are allowed", f.Name, target)}
		}
		return os.Symlink(target, p)
	case filemode.Regular, filemode.Deprecated, filemode.Executable:
		mode := os.FileMode(0o644)
		if f.Mode == filemode.Executable {
			mode = 0o755
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, r); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	default:
		return nil // submodules and other entries are not part of a service
	}
}

// checkLinks resolves every symlink of a written tree the way the kernel
// does and refuses one that leaves it. writeFile's check is textual and
// cannot see that ".." after a link climbs from where the link points (with
// "s -> .", "s/s/../../x" reads as "x" but resolves two levels above the
// tree); os.Root follows links component by component and fails on any
// escape, loop or overly long chain of links. A link whose target does not
// exist stays dangling: the tree is never written to once materialized.
func checkLinks(dir string, links []string) error {
	if len(links) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, name := range links {
		_, err := root.Stat(filepath.FromSlash(name))
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		target, _ := os.Readlink(filepath.Join(dir, filepath.FromSlash(name)))
		return &domain.Error{Code: domain.CodeInvalid,
			Message: fmt.Sprintf("symlink %s points outside the repository or loops (%s): only relative links that resolve inside it are allowed", name, target), Err: err}
	}
	return nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// removeTrees deletes every materialized tree of a service.
func (c *Catalog) removeTrees(name string) error {
	dir := filepath.Join(c.cfg.Dir, name)
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing trees of %s: %w", name, err)
	}
	return nil
}

// removeTree deletes the tree of one commit, and the service's directory
// if that leaves it empty.
func (c *Catalog) removeTree(name, commit string) {
	dir := c.treeDir(name, commit)
	if err := os.RemoveAll(dir); err != nil {
		c.log.Warn("removing the tree of a refused commit", "service", name, "commit", commit, "err", err)
		return
	}
	_ = os.Remove(filepath.Dir(dir)) // fails, as it should, unless empty
}

// cleanTemp removes temporary trees a crashed materialization left behind.
func (c *Catalog) cleanTemp() {
	matches, _ := filepath.Glob(filepath.Join(c.cfg.Dir, "*", ".tmp-*"))
	for _, m := range matches {
		if strings.HasPrefix(filepath.Base(m), ".tmp-") {
			_ = os.RemoveAll(m)
		}
	}
}
