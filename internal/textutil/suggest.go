// Package textutil holds small text helpers shared by the validators: the
// "did you mean …?" hint of fail-closed error messages.
package textutil

import "strings"

// Suggest returns " (did you mean x?)" for the candidate closest to word
// (edit distance at most 2, or 3 for words of 5 letters or more that start
// with the same 3 letters — retires → retry —, or a prefix of at least 3
// letters either way), or "" when none is close.
func Suggest(word string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := Distance(word, c)
		if len(word) >= 3 && (strings.HasPrefix(c, word) || strings.HasPrefix(word, c)) {
			d = min(d, 1)
		}
		if d == 3 && len(word) >= 5 && len(c) >= 3 && word[:3] == c[:3] {
			d = 2 // counts as close, after every real distance-2 candidate
			if bestD == 2 {
				continue
			}
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// Distance is the Levenshtein edit distance of a and b; words longer than
// 64 bytes are never close (99).
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
