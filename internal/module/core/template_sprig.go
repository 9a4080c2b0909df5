package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"

	"github.com/soulstack/soulstack/internal/expr"
)

// sprigLeftOut are functions of sprig's hermetic set that are still not
// repeatable (random salts, keys, IVs and shuffles; the time since now):
// a rendered file must be the same on every run, or every run changes it.
var sprigLeftOut = []string{
	"ago", "randInt", "shuffle",
	"bcrypt", "htpasswd", "encryptAES",
	"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
	// Never the environment (SPEC §9); HermeticTxtFuncMap drops them
	// already, listed so that stays true whatever sprig does.
	"env", "expandenv", "getHostByName",
}

// maxSeqItems bounds the lists until/untilStep/seq build: no template
// needs more, and a []int of this size is 8 MiB.
const maxSeqItems = 1 << 20

// buildTemplateFuncs is sprig's hermetic function set (SPEC §9) with our
// bounded helpers winning: every function whose result size a template
// argument controls is checked against MaxRenderedBytes before it builds
// anything (audit L4).
func buildTemplateFuncs() template.FuncMap {
	fm := sprig.HermeticTxtFuncMap()
	for _, name := range sprigLeftOut {
		delete(fm, name)
	}
	bounded := template.FuncMap{
		"join":             joinAny,
		"toJSON":           toJSON,
		"toJson":           toJSON,
		"toRawJson":        toJSON,
		"mustToJson":       toJSON,
		"mustToRawJson":    toJSON,
		"toPrettyJson":     toPrettyJSON,
		"mustToPrettyJson": toPrettyJSON,
		"upper":            strings.ToUpper,
		"lower":            strings.ToLower,
		"trim":             strings.TrimSpace,
		"indent":           indent,
		"nindent":          func(n int, s string) (string, error) { r, err := indent(n, s); return "\n" + r, err },
		"quote":            func(s any) string { return fmt.Sprintf("%q", fmt.Sprint(s)) },
		"repeat":           repeatBounded,
		"wrapWith":         wrapWithBounded(fm["wrapWith"].(func(int, string, string) string)),
		"until":            func(n int) ([]int, error) { return untilStep(0, n, sign(n)) },
		"untilStep":        untilStep,
		"seq":              seqBounded(fm["seq"].(func(...int) string)),
	}
	for k, v := range bounded {
		fm[k] = v
	}
	return fm
}

func sign(n int) int {
	if n < 0 {
		return -1
	}
	return 1
}

func repeatBounded(n int, s string) (string, error) {
	if n < 0 {
		return "", fmt.Errorf("repeat: negative count %d", n)
	}
	if n > MaxRenderedBytes || (len(s) > 0 && n > MaxRenderedBytes/len(s)) {
		return "", fmt.Errorf("repeat %d: the result would be over the %d MiB limit of a template", n, MaxRenderedBytes>>20)
	}
	return strings.Repeat(s, n), nil
}

func wrapWithBounded(wrap func(int, string, string) string) func(int, string, string) (string, error) {
	return func(l int, sep, s string) (string, error) {
		if err := checkSize("wrapWith", len(s)+len(s)*len(sep)); err != nil {
			return "", err
		}
		return wrap(l, sep, s), nil
	}
}

// seqLen is how many numbers start..stop by step holds (sprig's rules: a
// step pointing away from stop gives none).
func seqLen(start, stop, step int) int {
	if step == 0 || (stop > start) != (step > 0) {
		return 0
	}
	d := int64(stop) - int64(start)
	if d < 0 {
		d = -d
	}
	s := int64(step)
	if s < 0 {
		s = -s
	}
	if n := d / s; n < int64(maxSeqItems)+1 {
		return int(n) + 1
	}
	return maxSeqItems + 1
}

func untilStep(start, stop, step int) ([]int, error) {
	if n := seqLen(start, stop, step); n > maxSeqItems {
		return nil, fmt.Errorf("untilStep %d %d %d: more than %d numbers, over the limit of a template", start, stop, step, maxSeqItems)
	}
	out := []int{}
	if step == 0 {
		return out, nil
	}
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return out, nil
}

func seqBounded(seq func(...int) string) func(...int) (string, error) {
	return func(p ...int) (string, error) {
		start, step, end := 1, 1, 0
		switch len(p) {
		case 1:
			end = p[0]
		case 2:
			start, end = p[0], p[1]
		case 3:
			start, step, end = p[0], p[1], p[2]
		}
		if len(p) < 3 && end < start {
			step = -1
		}
		if seqLen(start, end, step) > maxSeqItems {
			return "", fmt.Errorf("seq: more than %d numbers, over the limit of a template", maxSeqItems)
		}
		return seq(p...), nil
	}
}

func toPrettyJSON(v any) (string, error) {
	if err := checkSize("toPrettyJson", expr.SizeOf(v, MaxRenderedBytes)); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("toPrettyJson: %w", err)
	}
	if err := checkSize("toPrettyJson", len(b)); err != nil {
		return "", err
	}
	return string(b), nil
}
