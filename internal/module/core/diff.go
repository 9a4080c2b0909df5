package core

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits that keep a diff cheap to compute and small enough for a run result.
const (
	diffContext   = 3
	diffMaxEdits  = 1000      // Myers D bound; beyond it the middle is one replace hunk
	diffMaxOutput = 256 << 10 // bytes of diff text kept in a result
	diffMaxInput  = 8 << 20   // larger inputs get a summary instead of a diff
)

type opKind byte

const (
	opEqual opKind = ' '
	opDel   opKind = '-'
	opIns   opKind = '+'
)

type edit struct {
	kind opKind
	a, b int // line index in a (for equal/del) and b (for equal/ins)
}

// unifiedDiff returns a unified diff from old to new, labelled with the
// given names ("/dev/null" for a missing side). It returns "" when the
// contents are equal. Binary or very large contents get a one-line summary.
func unifiedDiff(oldName, newName string, old, cur []byte) string {
	if bytes.Equal(old, cur) {
		return ""
	}
	header := fmt.Sprintf("--- %s\n+++ %s\n", oldName, newName)
	if isBinary(old) || isBinary(cur) || len(old)+len(cur) > diffMaxInput {
		return header + fmt.Sprintf("binary or large content differs (%d bytes -> %d bytes)\n", len(old), len(cur))
	}
	a, b := splitLines(old), splitLines(cur)
	edits := diffLines(a, b)
	var sb strings.Builder
	sb.WriteString(header)
	for _, h := range hunks(edits) {
		writeHunk(&sb, h, a, b)
		if sb.Len() > diffMaxOutput {
			out := sb.String()[:diffMaxOutput]
			return out[:strings.LastIndexByte(out, '\n')+1] + "... diff truncated\n"
		}
	}
	return sb.String()
}

func isBinary(b []byte) bool {
	probe := b
	if len(probe) > 8000 {
		probe = probe[:8000]
	}
	return bytes.IndexByte(probe, 0) >= 0 || !utf8.Valid(probe[:utf8ValidPrefix(probe)])
}

// utf8ValidPrefix cuts a probe at a rune boundary so a multi-byte rune split
// by the probe limit does not count as invalid.
func utf8ValidPrefix(b []byte) int {
	n := len(b)
	for i := 0; i < 3 && n-i > 0; i++ {
		if utf8.RuneStart(b[n-1-i]) {
			if !utf8.FullRune(b[n-1-i:]) {
				return n - 1 - i
			}
			break
		}
	}
	return n
}

// splitLines splits keeping the line terminators, so a missing final newline
// is a difference that shows.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	out := make([]string, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffLines computes an edit script from a to b: common prefix and suffix
// are trimmed, then Myers' O(ND) algorithm runs on the middle. When the
// middle needs more than diffMaxEdits edits it is emitted as one replace,
// which is still a correct (if not minimal) diff.
func diffLines(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []edit
	for i := range pre {
		out = append(out, edit{opEqual, i, i})
	}
	mid := myers(a[pre:len(a)-suf], b[pre:len(b)-suf])
	if mid == nil {
		for i := pre; i < len(a)-suf; i++ {
			mid = append(mid, edit{opDel, i - pre, 0})
		}
		for j := pre; j < len(b)-suf; j++ {
			mid = append(mid, edit{opIns, 0, j - pre})
		}
	}
	for _, e := range mid {
		out = append(out, edit{e.kind, e.a + pre, e.b + pre})
	}
	for i := range suf {
		out = append(out, edit{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return out
}

// myers returns the shortest edit script, or nil when it needs more than
// diffMaxEdits edits (and the inputs are not both empty).
func myers(a, b []string) []edit {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return []edit{}
	}
	maxD := min(n+m, diffMaxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		snap := make([]int, 2*d+3)
		copy(snap, v[off-d-1:off+d+2])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, d)
			}
		}
	}
	return nil
}

// backtrack walks the saved V arrays from the end to the start. trace[d]
// holds V as it was before round d, for k in [-d-1, d+1].
func backtrack(trace [][]int, a, b []string, dEnd int) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for d := dEnd; d > 0; d-- {
		vd := trace[d]
		get := func(k int) int { return vd[k+d+1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := get(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, edit{opEqual, x, y})
		}
		if x == prevX {
			y--
			rev = append(rev, edit{opIns, x, y})
		} else {
			x--
			rev = append(rev, edit{opDel, x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{opEqual, x, y})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// hunks groups an edit script into runs of changes with diffContext lines
// of context around them.
func hunks(edits []edit) [][]edit {
	var out [][]edit
	i := 0
	for i < len(edits) {
		for i < len(edits) && edits[i].kind == opEqual {
			i++
		}
		if i == len(edits) {
			break
		}
		start := max(i-diffContext, 0)
		end := i
		for end < len(edits) {
			if edits[end].kind != opEqual {
				end++
				continue
			}
			run := end
			for run < len(edits) && edits[run].kind == opEqual {
				run++
			}
			if run == len(edits) || run-end > 2*diffContext {
				end = min(end+diffContext, len(edits))
				break
			}
			end = run
		}
		out = append(out, edits[start:end])
		i = end
	}
	return out
}

func writeHunk(sb *strings.Builder, h []edit, a, b []string) {
	aStart, bStart, aLen, bLen := -1, -1, 0, 0
	for _, e := range h {
		if e.kind != opIns {
			if aStart < 0 {
				aStart = e.a
			}
			aLen++
		}
		if e.kind != opDel {
			if bStart < 0 {
				bStart = e.b
			}
			bLen++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(aStart, aLen, h[0].a), hunkRange(bStart, bLen, h[0].b))
	for _, e := range h {
		line := ""
		switch e.kind {
		case opIns:
			line = b[e.b]
		default:
			line = a[e.a]
		}
		sb.WriteByte(byte(e.kind))
		sb.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats "start,len" with 1-based start; an empty range names the
// line before it, as diff -u does.
func hunkRange(start, n, fallback int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", fallback)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
