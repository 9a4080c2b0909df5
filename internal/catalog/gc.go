package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Bounds of materialized trees (audit finding L12): a few MB of packed git
// can hold GBs of blobs, on the volume of the database.
const (
	// DefaultMaxTreeBytes bounds the bytes of one materialized tree.
	DefaultMaxTreeBytes = 256 << 20
	// DefaultTreeGrace is how long an unused tree is kept after it was
	// materialized (a registration in progress is not referenced yet).
	DefaultTreeGrace = 10 * time.Minute
)

// treeTooLarge refuses a tree over the size cap.
func (c *Catalog) treeTooLarge(name string, commit plumbing.Hash, size int64) error {
	return treeSizeError{name: name, commit: commit.String(), limit: c.cfg.MaxTreeBytes, size: size}
}

type treeSizeError struct {
	name, commit string
	limit, size  int64
}

func (e treeSizeError) Error() string {
	return fmt.Sprintf("the tree of %s at %s holds more than %d bytes (at least %d): over the keeper's services.max_tree_size; keep large files out of the service repository",
		e.name, e.commit[:12], e.limit, e.size)
}

// Collect removes the materialized trees nothing uses any more: not the
// commit of a service's record, not pinned by an incarnation, and older
// than the grace period. A collected tree that is needed again (an old
// run's files) is materialized again from the repository. It returns the
// trees removed, as name/commit.
func (c *Catalog) Collect(ctx context.Context) ([]string, error) {
	return c.collect(ctx, "")
}

// collect is Collect keeping the tree keep (name/commit) as well.
func (c *Catalog) collect(ctx context.Context, keep string) ([]string, error) {
	unlock := c.lock("collect")
	defer unlock()
	used := map[string]bool{keep: true}
	svcs, err := c.cfg.Store.ListServices(ctx)
	if err != nil {
		return nil, fmt.Errorf("collecting trees: %w", err)
	}
	for _, s := range svcs {
		used[s.Name+"/"+s.Commit] = true
	}
	incs, err := c.cfg.Store.ListIncarnations(ctx)
	if err != nil {
		return nil, fmt.Errorf("collecting trees: %w", err)
	}
	for _, in := range incs {
		used[in.Service+"/"+in.Commit] = true
	}
	names, err := os.ReadDir(c.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("collecting trees: %w", err)
	}
	var removed []string
	var errs []error
	for _, n := range names {
		if !n.IsDir() || strings.HasPrefix(n.Name(), ".") || ValidName(n.Name()) != nil {
			continue
		}
		dir := filepath.Join(c.cfg.Dir, n.Name())
		commits, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, cm := range commits {
			key := n.Name() + "/" + cm.Name()
			if !cm.IsDir() || !plumbing.IsHash(cm.Name()) || used[key] {
				continue
			}
			if fi, err := cm.Info(); err != nil || time.Since(fi.ModTime()) < c.cfg.TreeGrace {
				continue
			}
			if err := c.removeUnused(n.Name(), cm.Name()); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, key)
		}
		_ = os.Remove(dir) // only when empty
	}
	if len(removed) > 0 {
		c.log.Info("removed unused service trees", "count", len(removed), "trees", removed)
	}
	return removed, errors.Join(errs...)
}

// removeUnused deletes one tree under its materialization lock.
func (c *Catalog) removeUnused(name, commit string) error {
	dst := c.treeDir(name, commit)
	unlock := c.lock("tree:" + dst)
	defer unlock()
	// Renamed first so a reader never sees half a tree.
	tmp := filepath.Join(filepath.Dir(dst), ".tmp-gc-"+commit)
	if err := os.Rename(dst, tmp); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("removing unused tree %s@%s: %w", name, commit, err)
	}
	c.mu.Lock()
	delete(c.cache, name+"@"+commit)
	c.mu.Unlock()
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("removing unused tree %s@%s: %w", name, commit, err)
	}
	return nil
}

// collectAfter runs Collect after a new tree was materialized, logging
// what fails: collection never fails the request that triggered it.
func (c *Catalog) collectAfter(ctx context.Context, name, commit string) {
	if _, err := c.collect(context.WithoutCancel(ctx), name+"/"+commit); err != nil {
		c.log.Warn("collecting unused service trees", "err", err)
	}
}
