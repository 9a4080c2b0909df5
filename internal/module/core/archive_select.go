package core

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// archiveSelect is what core.archive.extracted's include, exclude,
// keep_newer and mode ask of the entries.
type archiveSelect struct {
	include, exclude []*regexp.Regexp
	includeSrc       []string
	keepNewer        bool
	mode             *archiveModeSpec
}

// newArchiveSelect reads include, exclude, keep_newer and mode.
func newArchiveSelect(a *args) (archiveSelect, error) {
	inc, exc := a.strList("include"), a.strList("exclude")
	s := archiveSelect{keepNewer: a.boolean("keep_newer", false), includeSrc: inc}
	modeStr := a.str("mode")
	if a.err != nil {
		return s, a.err
	}
	if len(inc) > 0 && len(exc) > 0 {
		return s, paramErr("include", "include and exclude are mutually exclusive: give one of them")
	}
	var err error
	if s.include, err = globList("include", inc); err != nil {
		return s, err
	}
	if s.exclude, err = globList("exclude", exc); err != nil {
		return s, err
	}
	if modeStr != "" {
		m, err := parseArchiveMode(modeStr)
		if err != nil {
			return s, paramErr("mode", "%v", err)
		}
		s.mode = &m
	}
	return s, nil
}

func globList(param string, pats []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(pats))
	for _, p := range pats {
		re, err := globRegexp(strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/"))
		if p == "" || err != nil {
			return nil, paramErr(param, "%q is not a path or shell-style glob", p)
		}
		out = append(out, re)
	}
	return out, nil
}

// globRegexp translates a shell-style glob as Python's fnmatch does (the
// one Ansible's unarchive uses): * and ? match any character, / too;
// [seq] and [!seq] match one character of (not of) seq.
func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(glob[i+1:], ']')
			if j == 0 && i+2 < len(glob) { // []…] holds a ]
				j = 1 + strings.IndexByte(glob[i+2:], ']')
			}
			if j < 1 {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`)$`)
	return regexp.Compile(b.String())
}

// matches reports whether a pattern matches the entry name or one of its
// parent directories, so that a directory's content goes with it.
func matches(pats []*regexp.Regexp, name string) int {
	name = strings.TrimSuffix(path.Clean(strings.TrimPrefix(name, "./")), "/")
	for p := name; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		for i, re := range pats {
			if re.MatchString(p) {
				return i
			}
		}
	}
	return -1
}

// pick returns the entries to extract: those an include pattern matches,
// or those no exclude pattern matches. An include pattern that matches
// nothing is an error (a typo would otherwise extract nothing quietly).
func (s archiveSelect) pick(entries []archiveEntry) ([]archiveEntry, error) {
	if len(s.include) == 0 && len(s.exclude) == 0 {
		return entries, nil
	}
	used := make([]bool, len(s.include))
	var out []archiveEntry
	for _, e := range entries {
		if len(s.include) > 0 {
			if i := matches(s.include, e.name); i >= 0 {
				used[i] = true
				out = append(out, e)
			}
			continue
		}
		if matches(s.exclude, e.name) < 0 {
			out = append(out, e)
		}
	}
	for i, ok := range used {
		if !ok {
			return nil, paramErr("include", "%q matches no entry of the archive", s.includeSrc[i])
		}
	}
	return out, nil
}

// archiveModeSpec is a mode param: octal ("0640") or symbolic as chmod(1)
// ("u+rwX,g-w,o="), applied to each extracted entry's mode.
type archiveModeSpec struct {
	octal   *fs.FileMode
	clauses []archiveModeClause
}

type archiveModeClause struct {
	who   uint32 // bits of u, g, o this clause changes
	op    byte   // + - =
	perms string // letters of r w x X s t
}

var symbolicModeRe = regexp.MustCompile(`^(a|[ugo]*)([-+=][rwxXst]*)+$`)

func parseArchiveMode(s string) (archiveModeSpec, error) {
	if s != "" && strings.Trim(s, "01234567") == "" {
		m, err := parseMode(s)
		return archiveModeSpec{octal: &m}, err
	}
	var spec archiveModeSpec
	for _, c := range strings.Split(s, ",") {
		if !symbolicModeRe.MatchString(c) {
			return spec, fmt.Errorf("%q is neither an octal mode (\"0644\") nor a symbolic one (\"u+rwX,g-w,o=\"): bad clause %q", s, c)
		}
		i := strings.IndexAny(c, "-+=")
		who := uint32(0)
		for _, w := range c[:i] {
			who |= map[rune]uint32{'u': 0o4700, 'g': 0o2070, 'o': 0o1007, 'a': 0o7777}[w]
		}
		if who == 0 {
			who = 0o7777
		}
		rest := c[i:]
		for rest != "" {
			j := strings.IndexAny(rest[1:], "-+=")
			if j < 0 {
				j = len(rest) - 1
			}
			spec.clauses = append(spec.clauses, archiveModeClause{who: who, op: rest[0], perms: rest[1 : j+1]})
			rest = rest[j+1:]
		}
	}
	return spec, nil
}

// apply returns the mode an entry of mode base (dir: a directory) gets.
func (m archiveModeSpec) apply(base fs.FileMode, dir bool) fs.FileMode {
	if m.octal != nil {
		return *m.octal
	}
	cur := uint32(base.Perm())
	if base&fs.ModeSetuid != 0 {
		cur |= 0o4000
	}
	if base&fs.ModeSetgid != 0 {
		cur |= 0o2000
	}
	if base&fs.ModeSticky != 0 {
		cur |= 0o1000
	}
	for _, c := range m.clauses {
		var bits uint32
		for _, p := range c.perms {
			switch p {
			case 'r':
				bits |= 0o444
			case 'w':
				bits |= 0o222
			case 'x':
				bits |= 0o111
			case 'X':
				if dir || cur&0o111 != 0 {
					bits |= 0o111
				}
			case 's':
				bits |= 0o6000
			case 't':
				bits |= 0o1000
			}
		}
		bits &= c.who
		switch c.op {
		case '+':
			cur |= bits
		case '-':
			cur &^= bits
		case '=':
			cur = cur&^c.who | bits
		}
	}
	out := fs.FileMode(cur & 0o777)
	if cur&0o4000 != 0 {
		out |= fs.ModeSetuid
	}
	if cur&0o2000 != 0 {
		out |= fs.ModeSetgid
	}
	if cur&0o1000 != 0 {
		out |= fs.ModeSticky
	}
	return out
}
