package jinja

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// wrapChunk splits a line into runs of whitespace and of the rest, as
// Python's textwrap does (without breaking on hyphens).
var wrapChunk = regexp.MustCompile(`\s+|\S+`)

// filterWordwrap is Jinja 3's wordwrap(width=79, break_long_words=True,
// wrapstring=None): each line of s wrapped with textwrap.wrap (long words
// broken, whitespace dropped at the ends of wrapped lines) and joined by
// wrapstring, the newline sequence by default.
func filterWordwrap(newline string) exec.FilterFunction {
	return func(_ *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
		width := intArg(p, 0, "width", 79)
		if width <= 0 {
			return errValue("wordwrap", "invalid width %d (must be > 0)", width)
		}
		breakLong := true
		if len(p.Args) > 1 {
			breakLong = p.Args[1].IsTrue()
		} else if v, ok := p.KwArgs["break_long_words"]; ok {
			breakLong = v.IsTrue()
		}
		wrap := newline
		if len(p.Args) > 2 {
			wrap = p.Args[2].String()
		} else if v, ok := p.KwArgs["wrapstring"]; ok {
			wrap = v.String()
		}
		var out []string
		for _, line := range splitLines(in.String()) {
			out = append(out, strings.Join(wrapLine(line, width, breakLong), wrap))
		}
		return exec.AsValue(strings.Join(out, wrap))
	}
}

// splitLines is Python's str.splitlines for \n, \r\n and \r.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func wrapLine(line string, width int, breakLong bool) []string {
	chunks := wrapChunk.FindAllString(line, -1)
	var lines []string
	for len(chunks) > 0 {
		var cur []string
		n := 0
		if len(lines) > 0 && strings.TrimSpace(chunks[0]) == "" {
			chunks = chunks[1:]
		}
		for len(chunks) > 0 {
			l := utf8.RuneCountInString(chunks[0])
			if n+l > width {
				break
			}
			cur, n = append(cur, chunks[0]), n+l
			chunks = chunks[1:]
		}
		if len(chunks) > 0 && utf8.RuneCountInString(chunks[0]) > width {
			room := width - n
			if room < 1 {
				room = 1
			}
			if breakLong {
				r := []rune(chunks[0])
				cur = append(cur, string(r[:room]))
				chunks[0] = string(r[room:])
			} else if len(cur) == 0 {
				cur = append(cur, chunks[0])
				chunks = chunks[1:]
			}
		}
		if len(cur) > 0 && strings.TrimSpace(cur[len(cur)-1]) == "" {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 {
			lines = append(lines, strings.Join(cur, ""))
		}
	}
	return lines
}

// filterReverse reverses a string or a list (gonja's sorts it).
func filterReverse(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	if in.IsString() {
		r := []rune(in.String())
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return exec.AsValue(string(r))
	}
	if !in.IsList() {
		return errValue("reverse", "cannot reverse %s", pyString(in))
	}
	out := make([]any, in.Len())
	for i := range out {
		out[len(out)-1-i] = in.Index(i).Interface()
	}
	return exec.AsValue(out)
}
