package health

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/soulstack/soulstack/internal/domain"
)

// Bounds of what an outcome carries.
const (
	// MaxMessage bounds a check's message (bytes).
	MaxMessage = 512
	// MaxPerfdata bounds the number of perfdata values kept.
	MaxPerfdata = 32
)

// Interpret turns a module result into a status and message. ctxErr is the
// error of the check's context after it ran (a deadline means it timed
// out). core.exec.run follows the Nagios plugin convention: rc 0 OK, 1
// WARNING, 2 CRITICAL, 3 UNKNOWN, the first stdout line is the message and
// what follows its "|" is perfdata; any other rc, a missing program, a
// killed command or binary output is UNKNOWN with why. Other modules are OK
// when they succeed and CRITICAL when they fail.
func Interpret(c Check, r domain.Result, ctxErr error) Outcome {
	o := Outcome{Incarnation: c.Incarnation, Check: c.Name}
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		o.Status, o.Message = Unknown, fmt.Sprintf("check timed out after %s", c.Timeout)
		return o
	}
	if c.Module != "core.exec.run" && c.Module != "core.cmd.shell" {
		if r.Failed || r.Unreachable {
			o.Status, o.Message = Critical, clean(firstLine(r.Msg))
		} else {
			o.Status, o.Message = OK, clean(firstLine(r.Msg))
		}
		return o
	}
	if isBinary(r.Stdout) {
		o.Status, o.Message = Unknown, fmt.Sprintf("check printed binary output (%d bytes), not a Nagios status line", len(r.Stdout))
		return o
	}
	msg, perf := splitPerf(firstLine(r.Stdout))
	o.Message, o.Perfdata = clean(msg), perf
	switch {
	case r.Failed && (r.RC < 0 || strings.Contains(r.Msg, "killed")):
		// Not an exit code of the program: it did not start, or was killed.
		o.Status, o.Message = Unknown, clean("check did not run to its end: "+firstLine(r.Msg))
	case r.RC == 0:
		o.Status = OK
	case r.RC == 1:
		o.Status = Warning
	case r.RC == 2:
		o.Status = Critical
	case r.RC == 3:
		o.Status = Unknown
	case r.RC == 126 || r.RC == 127:
		o.Status, o.Message = Unknown, clean(fmt.Sprintf("check program not found or not executable (rc %d): %s", r.RC, orElse(lastLine(r.Stderr), r.Msg)))
	default:
		o.Status, o.Message = Unknown, clean(fmt.Sprintf("check exited with rc %d, not a Nagios status (0-3): %s", r.RC, orElse(msg, lastLine(r.Stderr))))
	}
	if o.Message == "" && o.Status != OK {
		o.Message = clean(lastLine(r.Stderr))
	}
	return o
}

// isBinary reports output that is not text: a NUL byte or invalid UTF-8.
func isBinary(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func orElse(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// clean trims s, drops control characters and bounds it to MaxMessage.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	s = strings.TrimSpace(s)
	if len(s) > MaxMessage {
		cut := MaxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// splitPerf splits a Nagios status line into its message and perfdata:
// "PING OK | rta=0.1ms;1;2;0 'pkt loss'=0%" → "PING OK", {rta: 0.1,
// "pkt loss": 0}. Values that are not numbers are dropped.
func splitPerf(line string) (string, map[string]float64) {
	msg, raw, ok := strings.Cut(line, "|")
	if !ok {
		return line, nil
	}
	perf := map[string]float64{}
	for _, item := range perfItems(raw) {
		label, val, ok := strings.Cut(item, "=")
		if !ok || label == "" {
			continue
		}
		label = strings.Trim(label, "'")
		val, _, _ = strings.Cut(val, ";")
		num := strings.TrimRightFunc(val, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || len(perf) >= MaxPerfdata {
			continue
		}
		perf[clean(label)] = f
	}
	if len(perf) == 0 {
		perf = nil
	}
	return strings.TrimSpace(msg), perf
}

// perfItems splits perfdata on spaces outside single quotes.
func perfItems(s string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted = !quoted
			b.WriteRune(r)
		case r == ' ' && !quoted:
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
