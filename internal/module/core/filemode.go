package core

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// symbolicMode is a chmod-style symbolic mode ("u=rwX,g=rX,o=", "a+x"),
// applied the way Ansible's file modules apply it: clause by clause to
// the current mode; X gives execute to directories and to files that
// already have an execute bit; a clause without u/g/o/a is masked by the
// umask.
type symbolicMode []modeClause

type modeClause struct {
	who string // some of "ugo"
	ops []modeOp
	// umask is set when the clause names nobody: as "a", but bits in
	// the umask are not affected.
	umask bool
}

type modeOp struct {
	op    byte // '+', '-' or '='
	perms string
}

// isSymbolicMode tells a symbolic mode from an octal one.
func isSymbolicMode(s string) bool {
	return strings.ContainsAny(s, "+-=")
}

// parseSymbolicMode parses s ("u=rwX,g=rX,o=rX").
func parseSymbolicMode(s string) (symbolicMode, error) {
	bad := fmt.Errorf("mode %q is neither an octal mode like \"0644\" nor a symbolic one like \"u=rwX,g=rX,o=\"", s)
	var m symbolicMode
	for _, part := range strings.Split(s, ",") {
		i := strings.IndexAny(part, "+-=")
		if i < 0 {
			return nil, bad
		}
		c := modeClause{who: part[:i]}
		if strings.Trim(c.who, "ugoa") != "" {
			return nil, bad
		}
		if c.who == "" {
			c.umask = true
		}
		if c.who == "" || strings.Contains(c.who, "a") {
			c.who = "ugo"
		}
		rest := part[i:]
		for rest != "" {
			op := rest[0]
			j := strings.IndexAny(rest[1:], "+-=")
			perms := rest[1:]
			if j >= 0 {
				perms, rest = rest[1:j+1], rest[j+1:]
			} else {
				rest = ""
			}
			if strings.Trim(perms, "rwxXstugo") != "" {
				return nil, bad
			}
			c.ops = append(c.ops, modeOp{op: op, perms: perms})
		}
		m = append(m, c)
	}
	return m, nil
}

// apply returns the mode that m gives a file whose mode is cur.
func (m symbolicMode) apply(cur fs.FileMode, isDir bool, umask uint32) fs.FileMode {
	mode := unixPerm(cur)
	for _, c := range m {
		for _, o := range c.ops {
			for _, who := range c.who {
				bits := permBitsFor(byte(who), o.perms, mode, isDir, c.umask, umask)
				switch o.op {
				case '=':
					mask := map[rune]uint32{'u': 0o4700, 'g': 0o2070, 'o': 0o1007}[who]
					mode = mode&^mask | bits
				case '+':
					mode |= bits
				case '-':
					mode &^= bits
				}
			}
		}
	}
	return fromUnixPerm(mode)
}

// permBitsFor is what perms mean for who, given the mode so far (Ansible's
// _get_octal_mode_from_symbolic_perms).
func permBitsFor(who byte, perms string, prev uint32, isDir, useUmask bool, umask uint32) uint32 {
	shift := map[byte]uint{'u': 6, 'g': 3, 'o': 0}[who]
	rwx := func(bit uint32) uint32 {
		b := bit << shift
		if useUmask {
			b &^= umask
		}
		return b
	}
	var out uint32
	for _, p := range perms {
		switch p {
		case 'r':
			out |= rwx(4)
		case 'w':
			out |= rwx(2)
		case 'x':
			out |= rwx(1)
		case 'X':
			if isDir || prev&0o111 != 0 {
				out |= 1 << shift
			}
		case 's':
			out |= map[byte]uint32{'u': 0o4000, 'g': 0o2000}[who]
		case 't':
			if who == 'o' {
				out |= 0o1000
			}
		case 'u', 'g', 'o':
			from := map[rune]uint{'u': 6, 'g': 3, 'o': 0}[p]
			out |= (prev >> from & 7) << shift
		}
	}
	return out
}

func unixPerm(m fs.FileMode) uint32 {
	n, _ := strconv.ParseUint(formatMode(m), 8, 32)
	return uint32(n)
}

func fromUnixPerm(n uint32) fs.FileMode {
	m, _ := parseMode(strconv.FormatUint(uint64(n), 8))
	return m
}

// processUmask reads the umask from /proc (umask(2) would change it for
// every thread while read); 022 when it cannot be read.
func processUmask() uint32 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0o022
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(n)
			}
		}
	}
	return 0o022
}

// forMode returns w with its symbolic mode, if any, applied to cur, the
// current mode of the file (or the default of a new one).
func (w fileWant) forMode(cur fs.FileMode, isDir bool) fileWant {
	if w.symbolic != nil {
		w.mode = w.symbolic.apply(cur&permBits, isDir, processUmask())
	}
	return w
}
