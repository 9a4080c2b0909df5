package core

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Ansible's lineinfile (backrefs) and replace take Python replacement
// templates: \1 … \99 and \g<1> or \g<name> are groups, \\ is a
// backslash and \n, \t … are the usual escapes. pyTemplate translates one
// to the template syntax of Go's Regexp.Expand (${1}, ${name}) and checks
// that every group it names exists in re.

// pyEscapes are the escapes of Python's re template besides groups.
var pyEscapes = map[byte]string{'a': "\a", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v", '\\': `\`}

// pyTemplate translates the Python template tmpl of param name into a Go
// template for re. With goDollar a "$" keeps its Go meaning ($1, ${name},
// $$ for a dollar sign), as core.file.replace documents; without it a "$"
// is literal text, as in Python.
func pyTemplate(name, tmpl string, re *regexp.Regexp, goDollar bool) (string, error) {
	var b strings.Builder
	group := func(ref string) error {
		if n, err := strconv.Atoi(ref); err == nil {
			if n > re.NumSubexp() {
				return fmt.Errorf("param %q: group \\%d does not exist: the regexp has %d group(s)", name, n, re.NumSubexp())
			}
		} else if re.SubexpIndex(ref) < 0 {
			return fmt.Errorf("param %q: the regexp has no group named %q (name one with (?P<%s>…))", name, ref, ref)
		}
		b.WriteString("${" + ref + "}")
		return nil
	}
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch {
		case c == '$' && !goDollar:
			b.WriteString("$$")
			continue
		case c == '$':
			if err := checkDollar(name, tmpl[i:], re); err != nil {
				return "", err
			}
			b.WriteByte(c)
			continue
		case c != '\\' || i+1 == len(tmpl):
			b.WriteByte(c)
			continue
		}
		i++
		c = tmpl[i]
		switch {
		case c == 'g':
			end := strings.IndexByte(tmpl[i:], '>')
			if i+1 >= len(tmpl) || tmpl[i+1] != '<' || end < 0 || end == 2 {
				return "", fmt.Errorf("param %q: \\g must be followed by <number> or <name>, as in \\g<1>", name)
			}
			if err := group(tmpl[i+2 : i+end]); err != nil {
				return "", err
			}
			i += end
		case c >= '1' && c <= '9':
			j := i + 1
			if j < len(tmpl) && tmpl[j] >= '0' && tmpl[j] <= '9' {
				j++
			}
			if err := group(tmpl[i:j]); err != nil {
				return "", err
			}
			i = j - 1
		case c == '0':
			b.WriteByte(0)
		case pyEscapes[c] != "":
			b.WriteString(pyEscapes[c])
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			return "", fmt.Errorf("param %q: \\%c is not an escape of a replacement: write \\\\%c for a backslash and %c", name, c, c, c)
		default:
			// As Python: an unknown escape such as \& keeps its backslash.
			b.WriteByte('\\')
			if c == '$' {
				b.WriteString("$$") // \$ is a backslash and a dollar sign
				continue
			}
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// goGroupRef matches a Go template reference at the start of a string:
// $name, ${name}, $1, ${1} or $$.
var goGroupRef = regexp.MustCompile(`^\$(?:\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))`)

// checkDollar checks a Go-style reference at s (which starts with "$")
// against re, so a typo is an error instead of an empty string.
func checkDollar(name, s string, re *regexp.Regexp) error {
	m := goGroupRef.FindStringSubmatch(s)
	if m == nil || m[0] == "$$" {
		return nil
	}
	ref := m[1] + m[2]
	if n, err := strconv.Atoi(ref); err == nil {
		if n > re.NumSubexp() {
			return fmt.Errorf("param %q: group $%s does not exist: the regexp has %d group(s) (write $$ for a dollar sign)", name, ref, re.NumSubexp())
		}
		return nil
	}
	if re.SubexpIndex(ref) < 0 {
		return fmt.Errorf("param %q: $%s names no group of the regexp (Go reads $%s as group %q; write ${1}x to end a group name, or $$ for a dollar sign)", name, ref, ref, ref)
	}
	return nil
}
