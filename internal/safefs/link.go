package safefs

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrCrossDevice is returned (wrapped) when a hard link would join two
// filesystems.
var ErrCrossDevice = errors.New("hard links cannot cross filesystems")

// SetTimes sets the access and modification times of the existing file or
// directory at the target, on a descriptor opened without following a
// symlink (and under the hard-link rule). A nil time is left alone.
func (t *Target) SetTimes(atime, mtime *time.Time) error {
	f, _, err := t.openExisting(unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	if atime != nil {
		ts[0] = unix.NsecToTimespec(atime.UnixNano())
	}
	if mtime != nil {
		ts[1] = unix.NsecToTimespec(mtime.UnixNano())
	}
	// utimensat(fd, NULL, ts, 0) is futimens: it acts on the descriptor.
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("setting the times of %s: %w", t.given, e)
	}
	return nil
}

// Hardlink makes the target a new name of the regular file at src,
// replacing what is there (not a directory) atomically: the link is made
// under a temporary name and renamed over the target. The source is
// linked by its name in its held-open directory, never through a symlink,
// and must pass the hard-link rule (a file planted in a directory an
// unprivileged user controls is refused).
func (t *Target) Hardlink(src *Target) error {
	var st unix.Stat_t
	if err := unix.Fstatat(src.dir.fd, src.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileErr("stat", src.given, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file", src.given)
	}
	if err := src.checkHardLink(&st); err != nil {
		return err
	}
	if uint64(st.Dev) != uint64(t.dir.st.Dev) {
		return fmt.Errorf("linking %s to %s: %w", t.given, src.given, ErrCrossDevice)
	}
	tmp, err := tempName(t.name)
	if err != nil {
		return fmt.Errorf("naming a temporary link for %s: %w", t.given, err)
	}
	// Flags 0: linkat does not follow a symlink at the source name.
	if err := unix.Linkat(src.dir.fd, src.name, t.dir.fd, tmp, 0); err != nil {
		if errors.Is(err, unix.EXDEV) {
			return fmt.Errorf("linking %s to %s: %w", t.given, src.given, ErrCrossDevice)
		}
		return fmt.Errorf("linking %s to %s: %w", t.given, src.given, errno(err))
	}
	var got unix.Stat_t
	if err := unix.Fstatat(t.dir.fd, tmp, &got, unix.AT_SYMLINK_NOFOLLOW); err != nil || got.Ino != st.Ino || got.Dev != st.Dev {
		// The source was swapped between the check and the link.
		_ = unix.Unlinkat(t.dir.fd, tmp, 0)
		return fmt.Errorf("%w: %s changed while it was being linked", ErrUnsafe, src.given)
	}
	if err := unix.Renameat(t.dir.fd, tmp, t.dir.fd, t.name); err != nil {
		_ = unix.Unlinkat(t.dir.fd, tmp, 0)
		return fmt.Errorf("renaming the new hard link over %s: %w", t.given, errno(err))
	}
	// rename(2) leaves both names when they already were links to the
	// same file.
	_ = unix.Unlinkat(t.dir.fd, tmp, 0)
	return t.syncDir()
}

// SameDevice reports whether i and o are on the same filesystem.
func (i Info) SameDevice(o Info) bool { return i.dev == o.dev }
