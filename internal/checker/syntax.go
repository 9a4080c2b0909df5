package checker

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	yamlLineRE = regexp.MustCompile(`line (\d+):`)
	itemKeyRE  = regexp.MustCompile(`^(\s*)-\s+([A-Za-z0-9_-]+)\s*:`)
	keyRE      = regexp.MustCompile(`^(\s*)([A-Za-z0-9_-]+)\s*:`)
)

// syntaxIssue turns a YAML syntax error into an Issue. When the error sits
// right after a list item of the shape
//
//	on-error:
//	  - error-type: AttemptsLimitReached
//	  handler: _exit
//
// (a key of the item indented at the dash instead of under the item's first
// key — the seed's VM-monitoring procedure) it points at that line with a
// hint, because the parser's own message names an earlier line.
func syntaxIssue(src []byte, err error) Issue {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	errLine := 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		errLine, _ = strconv.Atoi(m[1])
	}
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		m := itemKeyRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		dash := len(m[1])
		keyCol := strings.Index(l, m[2])
		j := nextSignificant(lines, i+1)
		if j < 0 {
			continue
		}
		k := keyRE.FindStringSubmatch(lines[j])
		if k == nil {
			continue
		}
		indent := len(k[1])
		// A key at the dash's column or between it and the item's key cannot
		// continue the item; the parser complains at the list (or before).
		if indent < dash || indent >= keyCol || errLine < i-1 || errLine > j+1 {
			continue
		}
		return Issue{Line: j + 1, Col: indent + 1, Msg: fmt.Sprintf(
			"line %d: `%s:` looks mis-indented: it must be indented under the `- %s:` item (same column as `%s`, column %d) (YAML parser: %s)",
			j+1, k[2], m[2], m[2], keyCol+1, msg)}
	}
	col, hint := 1, ""
	switch {
	case strings.Contains(msg, "found character that cannot start any token"):
		hint = " (tabs are not allowed for indentation; quote values starting with @ or `)"
		if errLine <= len(lines) {
			if i := strings.IndexByte(lines[errLine-1], '\t'); i >= 0 {
				col = i + 1
			}
		}
	case strings.Contains(msg, "mapping values are not allowed"),
		strings.Contains(msg, "did not find expected key"),
		strings.Contains(msg, "did not find expected '-' indicator"):
		hint = " (check the indentation of this line and the one above)"
	}
	// The position is the issue's: the parser's "line N:" would repeat it.
	msg = yamlLineRE.ReplaceAllString(msg, "")
	return Issue{Line: errLine, Col: col, Msg: "invalid YAML: " + strings.TrimSpace(msg) + hint}
}

// nextSignificant returns the index of the first line at or after from that
// is neither blank nor a comment, or -1.
func nextSignificant(lines []string, from int) int {
	for j := from; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if t != "" && !strings.HasPrefix(t, "#") {
			return j
		}
	}
	return -1
}
