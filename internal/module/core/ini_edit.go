package core

import (
	"regexp"
	"slices"
	"strings"
)

// The line-level INI editor of core.file.ini, a port of the algorithm of
// community.general's ini_file: the file stays a list of lines, and only
// the lines of the one option (or section) asked for are replaced, removed
// or inserted, so comments, blank lines, spacing and the order of
// everything else survive byte for byte.
//
// gopkg.in/ini.v1 was evaluated and does not fit: a load/save round trip
// rewrites "key=value" as "key = value", ";comment" as "; comment" and
// collapses the spacing around "=", so an edit of one option would rewrite
// the whole file (and a second tool's diff with it).

// iniFakeSection names the section that holds the options before the
// first section header; the editor puts its header above the first line
// and removes it at the end (Ansible uses the same name).
const iniFakeSection = "ad01e11446efb704fcdbdb21f2c43757423d91c5"

// iniCond is one item of section_has_values: among sections of the same
// name, the one chosen holds option (with one of values, when given).
type iniCond struct {
	option string
	values []string
}

// iniEdit is one core.file.ini call, parsed.
type iniEdit struct {
	section        string // "" = before the first section
	hasValues      []iniCond
	option         string // "" = the whole section
	values         []string
	absent         bool
	exclusive      bool
	noExtraSpaces  bool
	ignoreSpaces   bool
	allowNoValue   bool
	modifyInactive bool
}

// iniMatch is an option line split as Ansible's match_opt splits it.
type iniMatch struct {
	ok                    bool
	comment, sep, value   string
	commentedWithoutValue bool
}

// iniMatcher matches the lines of one option, commented out or not.
type iniMatcher struct{ any, active *regexp.Regexp }

func newIniMatcher(option string) iniMatcher {
	q := regexp.QuoteMeta(option)
	return iniMatcher{
		any:    regexp.MustCompile(`^[ \t]*([#;]?)[ \t]*` + q + `[ \t]*(=|$)[ \t]*(.*)`),
		active: regexp.MustCompile(`^[ \t]*()` + q + `[ \t]*(=|$)[ \t]*(.*)`),
	}
}

func (m iniMatcher) match(line string, inactiveToo bool) iniMatch {
	re := m.active
	if inactiveToo {
		re = m.any
	}
	s := re.FindStringSubmatch(line)
	if s == nil {
		return iniMatch{}
	}
	return iniMatch{ok: true, comment: s[1], sep: s[2], value: s[3], commentedWithoutValue: s[1] != "" && s[2] == ""}
}

// blankOrComment matches the lines new options are not inserted after.
var blankOrComment = regexp.MustCompile(`^[ \t]*([#;].*)?$`)

// apply edits lines (without their line ends) and returns the new lines
// and what was done, in Ansible's words ("OK", "option added", …).
func (e iniEdit) apply(lines []string) ([]string, string) {
	msg := "OK"
	sep := " = "
	if e.noExtraSpaces {
		sep = "="
	}
	values := dedupe(e.values)
	opt := newIniMatcher(e.option)
	// The fake header above the first line and a lone "[" below the last
	// make every run of lines a section that ends at a header.
	ini := make([]string, 0, len(lines)+2)
	ini = append(append(append(ini, "["+iniFakeSection+"]"), lines...), "[")
	section := e.section
	if section == "" {
		section = iniFakeSection
	}
	header := regexp.MustCompile(`^\[\s*` + regexp.QuoteMeta(strings.TrimSpace(section)) + `\s*]`)
	within := false
	start, end := 0, 0
	for i, l := range ini {
		if within && strings.HasPrefix(l, "[") {
			if e.sectionHasValues(ini[start:i]) {
				end = i
				break
			}
			within, start, end = false, 0, 0
		}
		if header.MatchString(l) {
			within, start = true, i
		}
	}
	sec := slices.Clone(ini[start:end])
	touched := make([]bool, len(sec))
	optionNoValuePresent := false

	// update replaces line i of the section by newline unless they differ
	// only in spaces around "=" and ignore_spaces is set.
	update := func(i int, newline string) {
		differs := sec[i] != newline
		if e.ignoreSpaces {
			if old := opt.match(sec[i], true); old.comment == "" {
				differs = old.value != opt.match(newline, true).value
			}
		}
		if differs {
			sec[i] = newline
			msg = "option changed"
		}
		touched[i] = true
	}

	if !e.absent && e.option != "" {
		// Lines holding one of the wanted values keep their place.
		for i, line := range sec {
			m := opt.match(line, e.modifyInactive)
			if !m.ok {
				continue
			}
			if len(values) > 0 && slices.Contains(values, m.value) {
				if m.value == "" && e.allowNoValue {
					update(i, e.option)
					optionNoValuePresent = true
				} else {
					update(i, e.option+sep+m.value)
				}
				values = slices.Delete(values, slices.Index(values, m.value), slices.Index(values, m.value)+1)
			} else if len(values) == 0 && e.allowNoValue {
				update(i, e.option)
				optionNoValuePresent = true
				break
			}
		}
	}
	if !e.absent && e.exclusive && !e.allowNoValue {
		// The other lines of the option take the values left, in order;
		// comment lines that only mention the option ("; option") are
		// documentation and stay.
		for i := 0; i < len(sec) && len(values) > 0; i++ {
			if touched[i] {
				continue
			}
			if m := opt.match(sec[i], e.modifyInactive); m.ok && !m.commentedWithoutValue {
				v := values[0]
				values = values[1:]
				update(i, e.option+sep+v)
			}
		}
		// Then every other occurrence goes (never the header, line 0).
		for i := len(sec) - 1; i > 0; i-- {
			if touched[i] {
				continue
			}
			if m := opt.match(sec[i], e.modifyInactive); m.ok && !m.commentedWithoutValue {
				sec = slices.Delete(sec, i, i+1)
				touched = slices.Delete(touched, i, i+1)
				msg = "option changed"
			}
		}
	}
	if !e.absent {
		// Missing lines go after the last line of the section that is
		// neither blank nor a comment.
		for i := len(sec); i > 0; i-- {
			if blankOrComment.MatchString(sec[i-1]) {
				continue
			}
			var add []string
			switch {
			case e.option != "" && len(values) > 0:
				for _, v := range values {
					add = append(add, e.option+sep+v)
				}
			case e.option != "" && e.allowNoValue && !optionNoValuePresent:
				add = []string{e.option}
			}
			if len(add) > 0 {
				sec = slices.Insert(sec, i, add...)
				msg = "option added"
			}
			break
		}
	}
	if e.absent {
		switch {
		case e.option == "":
			if len(sec) > 0 {
				sec, msg = nil, "section removed"
			}
		case e.exclusive || len(values) > 0:
			kept := make([]string, 0, len(sec))
			for _, l := range sec {
				m := opt.match(l, false)
				if m.ok && (e.exclusive || slices.Contains(values, m.value)) {
					continue
				}
				kept = append(kept, l)
			}
			if len(kept) != len(sec) {
				sec, msg = kept, "option changed"
			}
		}
	}

	out := make([]string, 0, len(ini)+len(values)+len(e.hasValues)+1)
	out = append(append(append(out, ini[:start]...), sec...), ini[end:]...)
	out = out[1 : len(out)-1]
	if !within && !e.absent {
		out = append(out, "["+section+"]")
		msg = "section and option added"
		for _, c := range e.hasValues {
			switch {
			case c.option != e.option && len(c.values) > 0:
				for _, v := range c.values {
					out = append(out, c.option+sep+v)
				}
			case c.option != e.option && e.allowNoValue:
				out = append(out, c.option)
			case c.option == e.option && !e.exclusive:
				for _, v := range c.values {
					if !slices.Contains(values, v) {
						values = append(values, v)
					}
				}
			}
		}
		switch {
		case e.option != "" && len(values) > 0:
			for _, v := range values {
				out = append(out, e.option+sep+v)
			}
		case e.option != "" && e.allowNoValue:
			out = append(out, e.option)
		default:
			msg = "only section added"
		}
	}
	return out, msg
}

// sectionHasValues reports whether the lines of one section (its header
// first) satisfy every section_has_values condition.
func (e iniEdit) sectionHasValues(lines []string) bool {
	for _, c := range e.hasValues {
		m := newIniMatcher(c.option)
		found := false
		for _, l := range lines {
			if mm := m.match(l, true); mm.ok && (len(c.values) == 0 || slices.Contains(c.values, mm.value)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// iniText is an INI file split into lines: a UTF-8 byte order mark is
// dropped (as Ansible reads with utf-8-sig), and the line end of the first
// line ("\r\n" or "\n") is the file's.
type iniText struct {
	lines    []string
	eol      string
	finalEOL bool // the last line ends with a line end (or the file is empty)
}

func splitIni(b []byte) iniText {
	s := strings.TrimPrefix(string(b), "\ufeff")
	t := iniText{eol: "\n", finalEOL: s == "" || strings.HasSuffix(s, "\n")}
	if s == "" {
		return t
	}
	if i := strings.IndexByte(s, '\n'); i > 0 && s[i-1] == '\r' {
		t.eol = "\r\n"
	}
	t.lines = strings.Split(strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r"), "\n")
	if t.eol == "\r\n" {
		for i, l := range t.lines {
			t.lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	return t
}

// iniContent returns the new content of a file read as old: old itself
// when the lines are the same and it ends with a line end, else the lines
// joined, each ending with the file's line end (so, as in Ansible, a
// missing final newline is added even when nothing else changes).
func iniContent(old []byte, t iniText, lines []string) []byte {
	if t.finalEOL && slices.Equal(t.lines, lines) {
		return old
	}
	if len(lines) == 0 {
		return []byte{}
	}
	return []byte(strings.Join(lines, t.eol) + t.eol)
}
