package core

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnifiedDiffGolden(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"new file", "", "x\ny\n", "--- /dev/null\n+++ f\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- /dev/null\n+++ f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"missing final newline", "a\n", "a", "--- /dev/null\n+++ f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"},
		{
			"two hunks",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
			"1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- /dev/null\n+++ f\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n",
		},
		{"binary", "a\x00b", "c", "--- /dev/null\n+++ f\nbinary or large content differs (3 bytes -> 1 bytes)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unifiedDiff("/dev/null", "f", []byte(tt.old), []byte(tt.new))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnifiedDiffApplies checks on random inputs that applying the diff to
// the old text gives the new one, and that it is minimal in changed lines
// when the edit distance is small.
func TestUnifiedDiffApplies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		old := randomLines(rng, rng.IntN(40))
		cur := mutate(rng, old)
		a, b := strings.Join(old, ""), strings.Join(cur, "")
		d := unifiedDiff("a", "b", []byte(a), []byte(b))
		got, err := applyUnified(a, d)
		if err != nil {
			t.Fatalf("case %d: %v\nold %q\nnew %q\ndiff:\n%s", i, err, a, b, d)
		}
		if got != b {
			t.Fatalf("case %d: applying the diff gives %q, want %q\ndiff:\n%s", i, got, b, d)
		}
	}
}

func TestDiffLinesFallsBackOnHugeEditDistance(t *testing.T) {
	var a, b []string
	for i := range diffMaxEdits + 10 {
		a = append(a, "a"+strconv.Itoa(i)+"\n")
		b = append(b, "b"+strconv.Itoa(i)+"\n")
	}
	out := unifiedDiff("a", "b", []byte(strings.Join(a, "")), []byte(strings.Join(b, "")))
	got, err := applyUnified(strings.Join(a, ""), out)
	if err != nil || got != strings.Join(b, "") {
		t.Fatalf("fallback diff does not apply: %v", err)
	}
}

func randomLines(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a'+rng.IntN(5))) + "\n"
	}
	if n > 0 && rng.IntN(4) == 0 {
		out[n-1] = strings.TrimSuffix(out[n-1], "\n")
	}
	return out
}

func mutate(rng *rand.Rand, in []string) []string {
	out := append([]string(nil), in...)
	for range rng.IntN(6) {
		switch op := rng.IntN(3); {
		case op == 0 && len(out) > 0:
			i := rng.IntN(len(out))
			out = append(out[:i], out[i+1:]...)
		case op == 1:
			i := rng.IntN(len(out) + 1)
			out = append(out[:i], append([]string{string(rune('a'+rng.IntN(7))) + "\n"}, out[i:]...)...)
		case len(out) > 0:
			out[rng.IntN(len(out))] = "z\n"
		}
	}
	// A line without newline may only be last.
	for i := 0; i < len(out)-1; i++ {
		if !strings.HasSuffix(out[i], "\n") {
			out[i] += "\n"
		}
	}
	return out
}

// applyUnified applies a diff produced by unifiedDiff, checking that every
// context and removed line matches the old text.
func applyUnified(old, diff string) (string, error) {
	if diff == "" {
		return old, nil
	}
	a := splitLines([]byte(old))
	lines := strings.SplitAfter(diff, "\n")
	var out []string
	pos := 0
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		if !strings.HasPrefix(l, "@@ ") {
			return "", fmt.Errorf("line %d: want a hunk header, got %q", i, l)
		}
		var aStart, aLen int
		spec := strings.Fields(l)[1][1:]
		if s, n, ok := strings.Cut(spec, ","); ok {
			aStart, _ = strconv.Atoi(s)
			aLen, _ = strconv.Atoi(n)
		} else {
			aStart, _ = strconv.Atoi(spec)
			aLen = 1
		}
		start := aStart - 1
		if aLen == 0 {
			start = aStart
		}
		for pos < start {
			out = append(out, a[pos])
			pos++
		}
		for i+1 < len(lines) && lines[i+1] != "" && !strings.HasPrefix(lines[i+1], "@@ ") {
			i++
			kind, body := lines[i][0], lines[i][1:]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\\ No newline") {
				body = strings.TrimSuffix(body, "\n")
				i++
			}
			switch kind {
			case ' ':
				if pos >= len(a) || a[pos] != body {
					return "", fmt.Errorf("context %q does not match old line %d", body, pos+1)
				}
				out = append(out, body)
				pos++
			case '-':
				if pos >= len(a) || a[pos] != body {
					return "", fmt.Errorf("removed %q does not match old line %d", body, pos+1)
				}
				pos++
			case '+':
				out = append(out, body)
			}
		}
	}
	out = append(out, a[pos:]...)
	return strings.Join(out, ""), nil
}
