// Package safefs lets a process running as root read and write files at
// paths that pass through directories unprivileged users control, without
// ever being redirected by a symlink (or a hard link) they planted
// (SPEC §9 "Files are written safely as root").
//
// A path is walked one component at a time from an open directory file
// descriptor (openat with O_NOFOLLOW), never by the kernel's own path
// resolution, so what was checked is what gets written:
//
//   - Every step from a directory to an entry in it obeys systemd-tmpfiles'
//     unsafe-path-transition rule: from a directory owned by a non-root user
//     the walk may only reach things owned by that same user. A symlink in
//     a user's directory pointing at /etc, or a root-owned directory inside a
//     user's one, stops the walk.
//   - A symlink in a parent directory is followed only when the rule above
//     allows it and the directory is not writable by anyone but its owner
//     (in a sticky directory such as /tmp: only a link owned by root or by
//     the directory's owner, the kernel's protected_symlinks rule). Root's
//     own links (/lib -> usr/lib, /var/run -> /run) are followed.
//   - The last component is never followed unless the caller asks for it
//     (Options.Follow); a symlink there is ErrSymlink. When followed, the
//     same rules apply to the link.
//   - Files are replaced by writing a temporary file of mode 0600 in the
//     target directory and renaming it over the name, so the old inode (a
//     hard link, maybe) is never written; owner and mode are set on the
//     file descriptor (fchown, fchmod).
//   - An existing regular file with more than one link whose owner differs
//     from its directory's non-root owner is refused before it is read or
//     its attributes are changed (a planted hard link).
//   - Removal unlinks the name, and walks directories with openat and
//     O_NOFOLLOW: a symlink is removed, never its target.
//
// With FS.Root set the walk is also confined to Root as if it were "/":
// `..` in the path is refused, absolute symlinks restart at Root and `..`
// in a symlink never climbs above it.
package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrSymlink is returned (wrapped) when the last component of a path is a
// symlink and the caller did not ask to follow it.
var ErrSymlink = errors.New("path is a symlink")

// ErrUnsafe is returned (wrapped) when a path passes through a directory
// controlled by an unprivileged user to something that user does not own.
var ErrUnsafe = errors.New("unsafe path")

// maxHops bounds the symlinks followed while resolving one path.
const maxHops = 40

// FS resolves module paths as the host (or the confinement root) sees them.
type FS struct {
	// Root confines every path to this directory ("" = the real /).
	Root string
	// rootID, set by Confine, is the inode Root must still be when a
	// walk opens it.
	rootID *[2]uint64
}

// Confine returns an FS confined to the directory p (resolved by fsys,
// following a symlink at p under the rules of this package) — for
// extracting an archive into it. Each walk checks that Root is still the
// directory resolved here, so swapping it for a symlink afterwards leads
// nowhere.
func (fsys FS) Confine(p string) (FS, error) {
	t, err := fsys.Open(p, Options{Follow: true})
	if err != nil {
		return FS{}, err
	}
	defer t.Close()
	info, ok, err := t.Lstat()
	if err != nil {
		return FS{}, err
	}
	if !ok {
		return FS{}, fmt.Errorf("directory %s does not exist: %w", p, fs.ErrNotExist)
	}
	if !info.IsDir() {
		return FS{}, fmt.Errorf("%s is not a directory", p)
	}
	return FS{Root: t.HostPath(), rootID: &[2]uint64{info.dev, info.ino}}, nil
}

// Options say how Open resolves a path.
type Options struct {
	// Follow follows a symlink at the last component (under the same
	// rules as in parent directories).
	Follow bool
	// MakeDirs creates missing parent directories (mode 0755). A directory
	// created inside one owned by a non-root user gets that user's owner
	// and group, so the path stays safe to walk.
	MakeDirs bool
}

// Info describes a file as lstat does.
type Info struct {
	Mode    fs.FileMode // type and permission bits, as os.Lstat reports them
	UID     int
	GID     int
	Size    int64
	Nlink   uint64
	ModTime time.Time
	// ATime is the last access time.
	ATime time.Time
	dev   uint64
	ino   uint64
}

// IsDir reports whether the file is a directory.
func (i Info) IsDir() bool { return i.Mode.IsDir() }

// IsRegular reports whether the file is a regular file.
func (i Info) IsRegular() bool { return i.Mode.IsRegular() }

// IsSymlink reports whether the file is a symlink.
func (i Info) IsSymlink() bool { return i.Mode&fs.ModeSymlink != 0 }

// Same reports whether i and o describe the same inode.
func (i Info) Same(o Info) bool { return i.dev == o.dev && i.ino == o.ino }

func infoOf(st *unix.Stat_t) Info {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return Info{
		Mode: m, UID: int(st.Uid), GID: int(st.Gid), Size: st.Size, Nlink: uint64(st.Nlink),
		ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), ATime: time.Unix(st.Atim.Sec, st.Atim.Nsec),
		dev: uint64(st.Dev), ino: st.Ino,
	}
}

// unsafeTransition is systemd's rule: passing from a directory owned by a
// non-root user to anything owned by another user is unsafe.
func unsafeTransition(from, to *unix.Stat_t) bool {
	return from.Uid != 0 && from.Uid != to.Uid
}

// writableByOthers reports whether someone besides the owner of dir (and
// root) may add, remove or rename its entries.
func writableByOthers(dir *unix.Stat_t) bool {
	return dir.Mode&0o002 != 0 || (dir.Mode&0o020 != 0 && dir.Gid != 0)
}

// mayFollow reports whether a symlink link found in dir may be followed.
func mayFollow(dir, link *unix.Stat_t) bool {
	if unsafeTransition(dir, link) {
		return false
	}
	if !writableByOthers(dir) {
		return true
	}
	return dir.Mode&unix.S_ISVTX != 0 && (link.Uid == 0 || link.Uid == dir.Uid)
}

// splitPath checks p and returns its components.
func (fsys FS) splitPath(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New("path is empty")
	}
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("path %q must be absolute", p)
	}
	if fsys.Root != "" {
		for _, part := range strings.Split(p, "/") {
			if part == ".." {
				return nil, fmt.Errorf("path %q contains '..', which is refused under --root %s", p, fsys.Root)
			}
		}
	}
	clean := filepath.Clean(p)
	if clean == "/" {
		return nil, nil
	}
	return strings.Split(strings.TrimPrefix(clean, "/"), "/"), nil
}

// hostPath is where the virtual path vp lives on the host.
func (fsys FS) hostPath(vp string) string {
	if fsys.Root == "" {
		return vp
	}
	return filepath.Join(fsys.Root, vp)
}

// HostPath returns the host path of p (absolute, as a module sees it)
// after resolving every symlink in it, the last one included, under the
// rules of this package. It is for handing a directory to another program
// (a command's working directory); files are read and written through
// Open.
func (fsys FS) HostPath(p string) (string, error) {
	comps, err := fsys.splitPath(p)
	if err != nil {
		return "", err
	}
	if len(comps) == 0 {
		return fsys.hostPath("/"), nil
	}
	t, err := fsys.Open(p, Options{Follow: true})
	if err != nil {
		return "", err
	}
	defer t.Close()
	return fsys.hostPath(t.VPath()), nil
}

func errno(err error) error {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}

func retryEINTR[T any](f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if !errors.Is(err, unix.EINTR) {
			return v, err
		}
	}
}

func fileErr(op, p string, err error) error {
	return &os.PathError{Op: op, Path: p, Err: errno(err)}
}

func joinV(dir, name string) string { return path.Join(dir, name) }
