package safefs

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"

	"golang.org/x/sys/unix"
)

// maxTreeDepth bounds how deep ChangeTree descends.
const maxTreeDepth = 4096

// TreeVisit is called by ChangeTree for every entry of the tree: rel is
// its path relative to the top directory ("" for the top itself) and info
// its lstat. It returns the owner and mode the entry should have.
type TreeVisit func(rel string, info Info) Attrs

// ChangeTree walks the directory at the target depth first, in name
// order, and gives every entry the attributes visit returns; with dry set
// it only walks and checks. A symlink is never followed: it is an entry of
// its own, whose owner is changed on a descriptor of the link itself (as
// lchown does) and whose mode is left alone, as are the modes of special
// files (fifos, sockets, devices). Directories and regular files get owner
// and mode on their own descriptor. A non-directory with several links in
// a directory an unprivileged user controls, owned by someone else, is a
// planted hard link: the walk stops with ErrUnsafe without touching it.
func (t *Target) ChangeTree(visit TreeVisit, dry bool) error {
	f, st, err := t.openExisting(unix.O_RDONLY | unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer f.Close()
	a := visit("", infoOf(&st))
	if !dry {
		if err := setAttrs(f, st, a, t.given); err != nil {
			return err
		}
	}
	return t.walkTree(int(f.Fd()), &st, "", visit, dry, 0)
}

func (t *Target) walkTree(dirfd int, dirst *unix.Stat_t, rel string, visit TreeVisit, dry bool, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: directory tree deeper than %d levels", t.given, maxTreeDepth)
	}
	names, err := readNames(dirfd)
	if err != nil {
		return fmt.Errorf("reading directory %s: %w", path.Join(t.given, rel), err)
	}
	for _, name := range names {
		if err := t.treeEntry(dirfd, dirst, path.Join(rel, name), name, visit, dry, depth); err != nil {
			return err
		}
	}
	return nil
}

// treeEntry opens one entry without following it, checks what was opened
// and applies visit's attributes to it.
func (t *Target) treeEntry(dirfd int, dirst *unix.Stat_t, rel, name string, visit TreeVisit, dry bool, depth int) error {
	full := path.Join(t.given, rel)
	var lst unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &lst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // removed meanwhile
		}
		return fileErr("stat", full, err)
	}
	flags := unix.O_PATH
	switch lst.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		flags = unix.O_RDONLY | unix.O_DIRECTORY
	case unix.S_IFREG:
		flags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fileErr("open", full, err)
	}
	f := os.NewFile(uintptr(fd), full)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileErr("stat", full, err)
	}
	if st.Mode&unix.S_IFMT != lst.Mode&unix.S_IFMT {
		return fmt.Errorf("%w: %s changed type while it was being walked", ErrUnsafe, full)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if !isDir && st.Nlink > 1 && (unsafeTransition(dirst, &st) || writableByOthers(dirst)) {
		return fmt.Errorf("%w: %s is a hard link (%d links) to a file owned by uid %d in a directory an unprivileged user controls; root will not change it", ErrUnsafe, full, st.Nlink, st.Uid)
	}
	a := visit(rel, infoOf(&st))
	if !dry {
		if err := applyTreeAttrs(f, st, a, full); err != nil {
			return err
		}
	}
	if isDir {
		return t.walkTree(fd, &st, rel, visit, dry, depth+1)
	}
	return nil
}

// applyTreeAttrs sets a on an entry: owner and mode of a directory or a
// regular file, only the owner of anything else (held by an O_PATH
// descriptor, changed with AT_EMPTY_PATH so a symlink is never followed).
func applyTreeAttrs(f *os.File, st unix.Stat_t, a Attrs, name string) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR, unix.S_IFREG:
		return setAttrs(f, st, a, name)
	}
	if (a.UID >= 0 && uint32(a.UID) != st.Uid) || (a.GID >= 0 && uint32(a.GID) != st.Gid) {
		if err := unix.Fchownat(int(f.Fd()), "", a.UID, a.GID, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("setting owner of %s: %w", name, errno(err))
		}
	}
	return nil
}

// readNames lists the directory open at fd, sorted, without closing fd.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, errno(err)
	}
	d := os.NewFile(uintptr(dup), "dir")
	defer d.Close()
	if _, err := unix.Seek(dup, 0, 0); err != nil {
		return nil, errno(err)
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}
