package safefs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Target is a resolved path: its parent directory, held open, and the name
// in it. Close it when done.
type Target struct {
	fsys  FS
	dir   frame
	name  string
	given string
}

// Close releases the parent directory.
func (t *Target) Close() error { return unix.Close(t.dir.fd) }

// VPath is the resolved path as seen inside the root (the real path
// without a root).
func (t *Target) VPath() string { return joinV(t.dir.vpath, t.name) }

// HostPath is where the target lives on the host (for messages).
func (t *Target) HostPath() string { return t.fsys.hostPath(t.VPath()) }

// DirInfo describes the parent directory.
func (t *Target) DirInfo() Info { return infoOf(&t.dir.st) }

// Lstat describes the target without following it; exists is false (and
// err nil) when there is nothing there.
func (t *Target) Lstat() (info Info, exists bool, err error) {
	var st unix.Stat_t
	err = unix.Fstatat(t.dir.fd, t.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return Info{}, false, nil
	}
	if err != nil {
		return Info{}, false, fileErr("stat", t.given, err)
	}
	return infoOf(&st), true, nil
}

// Readlink returns the target of a symlink.
func (t *Target) Readlink() (string, error) {
	s, err := readlinkAt(t.dir.fd, t.name)
	if err != nil {
		return "", fileErr("readlink", t.given, err)
	}
	return s, nil
}

// checkHardLink refuses a regular file with several links in a directory
// an unprivileged user controls (owned by someone else than that user, or
// in a directory others may write, such as /tmp): a hard link planted to a
// file it must not read or change.
func (t *Target) checkHardLink(st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 && (unsafeTransition(&t.dir.st, st) || writableByOthers(&t.dir.st)) {
		return fmt.Errorf("%w: %s is a hard link (%d links) to a file owned by uid %d in a directory an unprivileged user controls; root will not read or change it", ErrUnsafe, t.given, st.Nlink, st.Uid)
	}
	return nil
}

// openExisting opens the target itself (never following a symlink) and
// checks it is still what info described.
func (t *Target) openExisting(flags int) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(t.dir.fd, t.name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	if errors.Is(err, unix.ELOOP) {
		return nil, st, fmt.Errorf("%s: %w", t.given, ErrSymlink)
	}
	if err != nil {
		return nil, st, fileErr("open", t.given, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, st, fileErr("stat", t.given, err)
	}
	if err := t.checkHardLink(&st); err != nil {
		_ = unix.Close(fd)
		return nil, st, err
	}
	return os.NewFile(uintptr(fd), t.HostPath()), st, nil
}

// OpenRead opens the regular file at the target for reading, without
// following a symlink (ErrSymlink) and under the hard-link rule.
func (t *Target) OpenRead() (*os.File, error) {
	f, st, err := t.openExisting(unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file", t.given)
	}
	return f, nil
}

// ReadFile returns the content of the regular file at the target, read
// through a descriptor opened without following symlinks. At most max
// bytes are read (max <= 0: no bound); a larger file is an error.
func (t *Target) ReadFile(max int64) ([]byte, error) {
	f, st, err := t.openExisting(unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", t.given)
	}
	if max > 0 && st.Size > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d this module reads", t.given, st.Size, max)
	}
	r := io.Reader(f)
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", t.given, err)
	}
	return b, nil
}

// Attrs are the owner and mode to set; a negative UID or GID (or a nil
// Mode) leaves that attribute alone.
type Attrs struct {
	UID, GID int
	Mode     *fs.FileMode
}

// SetAttrs changes owner, then mode, of the existing file or directory at
// the target on its open descriptor. The mode is set again after a chown,
// which clears the setuid and setgid bits.
func (t *Target) SetAttrs(a Attrs) error {
	f, st, err := t.openExisting(unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	return setAttrs(f, st, a, t.given)
}

func setAttrs(f *os.File, st unix.Stat_t, a Attrs, name string) error {
	info := infoOf(&st)
	chowned := false
	if (a.UID >= 0 && a.UID != info.UID) || (a.GID >= 0 && a.GID != info.GID) {
		if err := unix.Fchown(int(f.Fd()), a.UID, a.GID); err != nil {
			return fmt.Errorf("setting owner of %s: %w", name, errno(err))
		}
		chowned = true
	}
	mode := info.Mode & permBits
	if a.Mode != nil {
		mode = *a.Mode
	}
	if chowned || info.Mode&permBits != mode {
		if err := unix.Fchmod(int(f.Fd()), unixMode(mode)); err != nil {
			return fmt.Errorf("setting mode of %s: %w", name, errno(err))
		}
	}
	return nil
}

const permBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

func unixMode(m fs.FileMode) uint32 {
	n := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		n |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		n |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		n |= unix.S_ISVTX
	}
	return n
}

func tempName(base string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "." + base + ".soulstack-" + hex.EncodeToString(b[:]), nil
}

// WriteFile replaces the target with data so that a reader (or a crash)
// sees the old file or the complete new one: the data goes to a temporary
// file created 0600 in the target's directory, which gets its owner and
// mode on its descriptor, is fsynced and renamed over the name; then the
// directory is fsynced. A symlink or a hard link at the name is replaced,
// never written through. The target must not be a directory.
func (t *Target) WriteFile(data []byte, mode fs.FileMode, uid, gid int) (err error) {
	tmp, err := tempName(t.name)
	if err != nil {
		return fmt.Errorf("naming a temporary file for %s: %w", t.given, err)
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(t.dir.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	})
	if err != nil {
		return fmt.Errorf("creating a temporary file for %s: %w", t.given, errno(err))
	}
	f := os.NewFile(uintptr(fd), joinV(t.dir.vpath, tmp))
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = unix.Unlinkat(t.dir.fd, tmp, 0)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", t.given, err)
	}
	var st unix.Stat_t
	if err = unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat of the temporary file of %s: %w", t.given, errno(err))
	}
	// Mode 0600 from creation; the wanted mode is set even when no owner
	// changes.
	st.Mode = st.Mode&^0o7777 | 0o600
	if err = setAttrs(f, st, Attrs{UID: uid, GID: gid, Mode: &mode}, t.given); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", t.given, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("closing the temporary file of %s: %w", t.given, err)
	}
	if err = unix.Renameat(t.dir.fd, tmp, t.dir.fd, t.name); err != nil {
		return fmt.Errorf("renaming the temporary file over %s: %w", t.given, errno(err))
	}
	return t.syncDir()
}

func (t *Target) syncDir() error {
	if err := unix.Fsync(t.dir.fd); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EBADF) {
		return fmt.Errorf("syncing the directory of %s: %w", t.given, errno(err))
	}
	return nil
}

// Mkdir creates the target directory (mode 0700 first, then the wanted
// owner and mode on its descriptor, so it is never more open than asked).
func (t *Target) Mkdir(a Attrs) error {
	if err := unix.Mkdirat(t.dir.fd, t.name, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", t.given, errno(err))
	}
	f, st, err := t.openExisting(unix.O_RDONLY | unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer f.Close()
	if a.Mode == nil {
		m := fs.FileMode(0o755)
		a.Mode = &m
	}
	if err := setAttrs(f, st, a, t.given); err != nil {
		return err
	}
	return t.syncDir()
}

// Symlink makes the target a symlink to dest, replacing what is there
// (not a directory) atomically: the link is made under a temporary name
// and renamed over the target.
func (t *Target) Symlink(dest string) error {
	tmp, err := tempName(t.name)
	if err != nil {
		return fmt.Errorf("naming a temporary link for %s: %w", t.given, err)
	}
	if err := unix.Symlinkat(dest, t.dir.fd, tmp); err != nil {
		return fmt.Errorf("creating a symlink for %s: %w", t.given, errno(err))
	}
	if err := unix.Renameat(t.dir.fd, tmp, t.dir.fd, t.name); err != nil {
		_ = unix.Unlinkat(t.dir.fd, tmp, 0)
		return fmt.Errorf("renaming the new symlink over %s: %w", t.given, errno(err))
	}
	return t.syncDir()
}

// Remove removes the target: a file or a symlink is unlinked (a symlink's
// target is left alone), a directory is removed with its content, walked
// with O_NOFOLLOW so no symlink inside leads the removal elsewhere.
func (t *Target) Remove() error {
	if err := removeAllAt(t.dir.fd, t.name, 0); err != nil {
		return fmt.Errorf("removing %s: %w", t.given, err)
	}
	return t.syncDir()
}

func removeAllAt(dirfd int, name string, depth int) error {
	if depth > 4096 {
		return errors.New("directory tree too deep")
	}
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return errno(err)
	}
	for attempt := 0; ; attempt++ {
		fd, err := retryEINTR(func() (int, error) {
			return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return errno(err)
		}
		d := os.NewFile(uintptr(fd), name)
		names, rerr := d.Readdirnames(-1)
		for _, n := range names {
			if err := removeAllAt(fd, n, depth+1); err != nil {
				_ = d.Close()
				return fmt.Errorf("%s/%s: %w", name, n, err)
			}
		}
		_ = d.Close()
		if rerr != nil {
			return rerr
		}
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) || attempt >= 3 {
			return errno(err)
		}
	}
}
