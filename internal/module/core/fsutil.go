package core

import (
	"fmt"
	"io/fs"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// fsOf is the safe filesystem of env: every path a file module touches is
// resolved through it (SPEC §9 "Files are written safely as root"),
// confined to env.Root when set.
func fsOf(env *module.Env) safefs.FS { return safefs.FS{Root: env.Root} }

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
