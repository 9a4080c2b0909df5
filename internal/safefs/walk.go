package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// frame is one open directory of the walk.
type frame struct {
	fd    int
	st    unix.Stat_t
	vpath string // as seen inside the root
}

type walker struct {
	fsys  FS
	stack []frame
	hops  int
	opts  Options
	orig  string // the path as given, for messages
}

func (w *walker) top() *frame { return &w.stack[len(w.stack)-1] }

func (w *walker) close() {
	for _, f := range w.stack {
		_ = unix.Close(f.fd)
	}
	w.stack = nil
}

// toRoot drops every open directory but the root.
func (w *walker) toRoot() {
	for len(w.stack) > 1 {
		w.pop()
	}
}

func (w *walker) pop() {
	_ = unix.Close(w.top().fd)
	w.stack = w.stack[:len(w.stack)-1]
}

func openDirAt(dirfd int, name string) (int, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if errors.Is(err, unix.EACCES) {
		// Searchable but not readable (mode 0711) when not root: an O_PATH
		// descriptor is enough to walk through it.
		fd, err = unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	return fd, err
}

func (w *walker) openRoot() error {
	root := w.fsys.Root
	if root == "" {
		root = "/"
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return fileErr("open", root, err)
	}
	f := frame{fd: fd, vpath: "/"}
	if err := unix.Fstat(fd, &f.st); err != nil {
		_ = unix.Close(fd)
		return fileErr("stat", root, err)
	}
	if id := w.fsys.rootID; id != nil && (uint64(f.st.Dev) != id[0] || f.st.Ino != id[1]) {
		_ = unix.Close(fd)
		return fmt.Errorf("%w: %s was replaced while in use", ErrUnsafe, root)
	}
	w.stack = []frame{f}
	return nil
}

func (w *walker) unsafe(what, vp string) error {
	return fmt.Errorf("%w: %s: %s (a directory writable by an unprivileged user leads to something another user owns; root will not follow it)", ErrUnsafe, w.orig, what+" "+vp)
}

// expandLink reads the symlink name in the top directory (whose lstat is
// lst) and returns its target's components; an absolute target resets the
// walk to the root.
func (w *walker) expandLink(name string, lst *unix.Stat_t) ([]string, error) {
	cur := w.top()
	vp := joinV(cur.vpath, name)
	if !mayFollow(&cur.st, lst) {
		return nil, w.unsafe("symlink", vp)
	}
	w.hops++
	if w.hops > maxHops {
		return nil, fileErr("resolve", w.orig, unix.ELOOP)
	}
	target, err := readlinkAt(cur.fd, name)
	if err != nil {
		return nil, fileErr("readlink", vp, err)
	}
	if strings.HasPrefix(target, "/") {
		if unsafeTransition(&cur.st, &w.stack[0].st) {
			return nil, w.unsafe("symlink", vp+" -> "+target)
		}
		w.toRoot()
	}
	return strings.Split(target, "/"), nil
}

func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// descend walks into the directory components of todo. A missing one is
// created when MakeDirs is set, else the error wraps fs.ErrNotExist.
func (w *walker) descend(todo []string) error {
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(w.stack) > 1 {
				// Climbing out of a user's directory into another
				// owner's is a transition like any other.
				if unsafeTransition(&w.top().st, &w.stack[len(w.stack)-2].st) {
					return w.unsafe("parent of", w.top().vpath)
				}
				w.pop()
			}
			continue
		}
		cur := w.top()
		vp := joinV(cur.vpath, name)
		var st unix.Stat_t
		err := unix.Fstatat(cur.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) && w.opts.MakeDirs {
			err = w.mkdir(cur, name, &st)
		}
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("directory %s does not exist: %w", vp, fs.ErrNotExist)
			}
			return fileErr("stat", vp, err)
		}
		if unsafeTransition(&cur.st, &st) {
			return w.unsafe("directory", vp)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			more, err := w.expandLink(name, &st)
			if err != nil {
				return err
			}
			todo = append(more, todo...)
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("%s is not a directory", vp)
		}
		fd, err := openDirAt(cur.fd, name)
		if err != nil {
			return fileErr("open", vp, err)
		}
		f := frame{fd: fd, vpath: vp}
		if err := unix.Fstat(fd, &f.st); err != nil {
			_ = unix.Close(fd)
			return fileErr("stat", vp, err)
		}
		// Checked again on what was opened: the entry may have been
		// swapped since the fstatat.
		if unsafeTransition(&cur.st, &f.st) {
			_ = unix.Close(fd)
			return w.unsafe("directory", vp)
		}
		w.stack = append(w.stack, f)
	}
	return nil
}

// mkdir creates name in cur (mode 0755, owned like cur when cur belongs to
// a non-root user) and stats it into st.
func (w *walker) mkdir(cur *frame, name string, st *unix.Stat_t) error {
	if err := unix.Mkdirat(cur.fd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	if cur.st.Uid != 0 && os.Geteuid() == 0 {
		if err := unix.Fchownat(cur.fd, name, int(cur.st.Uid), int(cur.st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	return unix.Fstatat(cur.fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
}

// Open resolves p (absolute, as a module sees it) to its parent directory,
// held open, and its last name. The last component itself is not opened:
// the Target's methods act on it relative to the directory. With
// o.Follow a symlink at the last component is resolved first.
func (fsys FS) Open(p string, o Options) (*Target, error) {
	comps, err := fsys.splitPath(p)
	if err != nil {
		return nil, err
	}
	if len(comps) == 0 {
		return nil, fmt.Errorf("%s is the root directory", p)
	}
	w := &walker{fsys: fsys, opts: o, orig: p}
	if err := w.openRoot(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			w.close()
		}
	}()
	todo := comps
	for {
		last := todo[len(todo)-1]
		if err := w.descend(todo[:len(todo)-1]); err != nil {
			return nil, err
		}
		if last == ".." || last == "." || last == "" {
			// Only reachable through a symlink's target ("dir/.."): walk
			// it as a directory and name it by its own directory entry.
			if err := w.descend([]string{last}); err != nil {
				return nil, err
			}
			if len(w.stack) == 1 {
				return nil, fmt.Errorf("%s resolves to the root directory", p)
			}
			vp := w.top().vpath
			w.pop()
			last = vp[strings.LastIndexByte(vp, '/')+1:]
		}
		cur := w.top()
		var st unix.Stat_t
		err := unix.Fstatat(cur.fd, last, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK && o.Follow {
			more, err := w.expandLink(last, &st)
			if err != nil {
				return nil, err
			}
			if len(more) == 0 || (len(more) == 1 && more[0] == "") {
				return nil, fmt.Errorf("symlink %s resolves to the root directory", joinV(cur.vpath, last))
			}
			todo = more
			continue
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return nil, fileErr("stat", joinV(cur.vpath, last), err)
		}
		d := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		w.close()
		ok = true
		return &Target{fsys: fsys, dir: d, name: last, given: p}, nil
	}
}
