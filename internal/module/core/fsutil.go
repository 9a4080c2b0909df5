package core

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"

	"github.com/soulstack/soulstack/internal/module"
)

// hostPath maps the absolute path p of a module param to the path on disk.
// Without a root it is p cleaned. With env.Root, p is resolved as if Root
// were "/": `..` components are rejected outright and symlinks in the parent
// directories are resolved inside Root, so no path can leave it. The last
// component is not resolved, so callers decide whether to follow a symlink
// there (see followLink).
func hostPath(env *module.Env, p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q must be absolute", p)
	}
	if env.Root == "" {
		return filepath.Clean(p), nil
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q contains '..', which is refused under --root %s", p, env.Root)
		}
	}
	clean := filepath.Clean(p)
	if clean == "/" {
		return filepath.Clean(env.Root), nil
	}
	dir, err := securejoin.SecureJoin(env.Root, filepath.Dir(clean))
	if err != nil {
		return "", fmt.Errorf("resolving %q under --root %s: %w", p, env.Root, err)
	}
	return filepath.Join(dir, filepath.Base(clean)), nil
}

// followLink resolves a symlink at the last component of hp (a result of
// hostPath), confined to env.Root when set. Paths that are not symlinks are
// returned unchanged.
func followLink(env *module.Env, hp string) (string, error) {
	fi, err := os.Lstat(hp)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return hp, nil
	}
	if env.Root != "" {
		rel, err := filepath.Rel(filepath.Clean(env.Root), hp)
		if err != nil {
			return "", fmt.Errorf("resolving symlink %s: %w", hp, err)
		}
		out, err := securejoin.SecureJoin(env.Root, rel)
		if err != nil {
			return "", fmt.Errorf("resolving symlink %s under --root %s: %w", hp, env.Root, err)
		}
		return out, nil
	}
	out, err := filepath.EvalSymlinks(hp)
	if err != nil {
		return "", fmt.Errorf("resolving symlink %s: %w", hp, err)
	}
	return out, nil
}

// isRootPath reports whether hp is the filesystem root or the confinement
// root, which no module may remove or replace.
func isRootPath(env *module.Env, hp string) bool {
	return hp == "/" || (env.Root != "" && hp == filepath.Clean(env.Root))
}

// parseMode parses an octal mode string such as "0644", "644" or "2755".
func parseMode(s string) (fs.FileMode, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "0o")
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o7777 {
		return 0, fmt.Errorf("mode %q is not an octal mode like \"0644\"", s)
	}
	m := fs.FileMode(n & 0o777)
	if n&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if n&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if n&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m, nil
}

const permBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// formatMode renders the permission bits of m as "0644" (or "2755").
func formatMode(m fs.FileMode) string {
	n := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		n |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		n |= 0o1000
	}
	return fmt.Sprintf("%04o", n)
}

// lookupUID resolves a user name or numeric uid; "" gives -1 (keep).
func lookupUID(owner string) (int, error) {
	if owner == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(owner); err == nil && n >= 0 {
		return n, nil
	}
	u, err := user.Lookup(owner)
	if err != nil {
		return 0, fmt.Errorf("owner %q: %w", owner, err)
	}
	return strconv.Atoi(u.Uid)
}

// lookupGID resolves a group name or numeric gid; "" gives -1 (keep).
func lookupGID(group string) (int, error) {
	if group == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(group); err == nil && n >= 0 {
		return n, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w", group, err)
	}
	return strconv.Atoi(g.Gid)
}

// ownerOf returns the uid and gid of fi.
func ownerOf(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

// writeAtomic replaces path with data so that a reader (or a crash) sees
// either the old file or the complete new one, never a partial write: the
// data goes to a temporary file in the same directory, which gets its owner
// and mode, is fsynced, and is renamed over path; then the directory is
// fsynced so the rename itself is durable.
func writeAtomic(path string, data []byte, mode fs.FileMode, uid, gid int) (err error) {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".soulstack-*")
	if err != nil {
		return fmt.Errorf("creating temporary file for %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if uid >= 0 || gid >= 0 {
		if err = f.Chown(uid, gid); err != nil {
			return fmt.Errorf("setting owner of %s: %w", path, err)
		}
	}
	// Chmod after Chown: chown clears the setuid and setgid bits.
	if err = f.Chmod(mode); err != nil {
		return fmt.Errorf("setting mode of %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s to %s: %w", tmp, path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	if dir == "" {
		dir = "."
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening directory %s to sync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
