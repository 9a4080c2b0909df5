package textutil

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// PyGroup matches Python's group references in a re.sub replacement
// (\1, \g<1>, \g<name>) and a bare $, which Go's expansion would read.
var PyGroup = regexp.MustCompile(`\\(?:g<(\w+)>|(\d+))|\$`)

// PyReplacement turns a Python re.sub replacement into Go's
// Regexp.Expand syntax: \1, \g<1> and \g<name> become ${1} or ${name},
// and a $ stays a literal $.
func PyReplacement(s string) string {
	return PyGroup.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$" {
			return "$$"
		}
		sub := PyGroup.FindStringSubmatch(m)
		if sub[1] != "" {
			return "${" + sub[1] + "}"
		}
		return "${" + sub[2] + "}"
	})
}

// PyRegexp compiles a Python regular expression as Go's RE2 reads it (no
// backreferences or lookaround: those fail to compile), with Ansible's
// ignorecase and multiline flags.
func PyRegexp(pattern string, ignorecase, multiline bool) (*regexp.Regexp, error) {
	flags := ""
	if ignorecase {
		flags += "i"
	}
	if multiline {
		flags += "m"
	}
	if flags != "" {
		pattern = "(?" + flags + ")" + pattern
	}
	return regexp.Compile(pattern)
}

// PySplit is Python's str.split() without arguments: the words between
// runs of whitespace (str.isspace, which also counts the ASCII
// separators \x1c-\x1f), none empty.
func PySplit(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}

var (
	pyIntText   = regexp.MustCompile(`^[+-]?[0-9](_?[0-9])*$`)
	pyFloatText = regexp.MustCompile(`^[+-]?(([0-9](_?[0-9])*)?\.[0-9](_?[0-9])*|[0-9](_?[0-9])*\.?)([eE][+-]?[0-9](_?[0-9])*)?$`)
	pySpecial   = regexp.MustCompile(`^(?i)[+-]?(inf|infinity|nan)$`)
)

// PyIntString parses s as Jinja's int filter does a string: int(s) (with
// Python's surrounding whitespace, sign and digit underscores), else
// int(float(s)) truncated toward zero. ok is false where Jinja would give
// its default (not a number, or NaN); an infinity is an error in Python
// (OverflowError) and here.
func PyIntString(s string) (n int64, ok bool, err error) {
	t := strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
	if pyIntText.MatchString(t) {
		n, err := strconv.ParseInt(strings.ReplaceAll(t, "_", ""), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%q does not fit in a 64-bit integer", t)
		}
		return n, true, nil
	}
	if !pyFloatText.MatchString(t) && !pySpecial.MatchString(t) {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false, nil
	}
	return PyIntFloat(f)
}

// PyIntFloat is Python's int(f): truncated toward zero; NaN is not a
// number (ok false) and an infinity, or a value past int64, an error.
func PyIntFloat(f float64) (n int64, ok bool, err error) {
	switch {
	case math.IsNaN(f):
		return 0, false, nil
	case math.IsInf(f, 0):
		return 0, false, fmt.Errorf("cannot convert float infinity to integer")
	case f >= 9.223372036854775807e18 || f < -9.223372036854775808e18:
		return 0, false, fmt.Errorf("%g does not fit in a 64-bit integer", f)
	}
	return int64(f), true, nil
}

// looseComponent splits a version as Python's LooseVersion does: runs of
// digits, runs of lower-case letters and dots are components, and so is
// whatever lies between them.
var looseComponent = regexp.MustCompile(`[0-9]+|[a-z]+|\.`)

type looseVersion []any // int64 or string

func parseLoose(v string) looseVersion {
	var parts []string
	last := 0
	for _, m := range looseComponent.FindAllStringIndex(v, -1) {
		if m[0] > last {
			parts = append(parts, v[last:m[0]])
		}
		parts = append(parts, v[m[0]:m[1]])
		last = m[1]
	}
	if last < len(v) {
		parts = append(parts, v[last:])
	}
	var out looseVersion
	for _, p := range parts {
		if p == "" || p == "." {
			continue
		}
		if n, err := strconv.ParseInt(p, 10, 64); err == nil && p[0] >= '0' && p[0] <= '9' {
			out = append(out, n)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// CompareLooseVersions compares a and b as Ansible's version test does by
// default (LooseVersion): component by component, numbers as numbers and
// words as text, a prefix before the longer version. It returns -1, 0 or
// 1; a number meeting a word at the same place is an error, as in Python.
func CompareLooseVersions(a, b string) (int, error) {
	va, vb := parseLoose(a), parseLoose(b)
	for i := 0; i < len(va) && i < len(vb); i++ {
		switch x := va[i].(type) {
		case int64:
			y, ok := vb[i].(int64)
			if !ok {
				return 0, fmt.Errorf("version comparison failed: %q and %q compare a number with %q", a, b, vb[i])
			}
			if x != y {
				return cmpInt(x, y), nil
			}
		case string:
			y, ok := vb[i].(string)
			if !ok {
				return 0, fmt.Errorf("version comparison failed: %q and %q compare %q with a number", a, b, x)
			}
			if c := strings.Compare(x, y); c != 0 {
				return c, nil
			}
		}
	}
	return cmpInt(int64(len(va)), int64(len(vb))), nil
}

func cmpInt(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
