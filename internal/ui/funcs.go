package ui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strings"
	"time"
)

// funcs are the template functions of every page.
func (u *UI) funcs() template.FuncMap {
	return template.FuncMap{
		"since":          u.since,
		"ts":             timestamp,
		"tsp":            timestampPtr,
		"ms":             durationMS,
		"span":           u.span,
		"short":          shortCommit,
		"sid":            shortID,
		"iso":            isoTime,
		"pretty":         prettyJSON,
		"st":             statusClass,
		"pe":             url.PathEscape,
		"qe":             url.QueryEscape,
		"facts":          flattenFacts,
		"fact":           lookupFact,
		"join":           strings.Join,
		"upper":          strings.ToUpper,
		"poll":           func() int64 { return u.cfg.PollInterval.Milliseconds() },
		"groupThreshold": func() int { return groupThreshold },
		"plural":         plural,
		"difflines":      diffLines,
	}
}

// diffLine is one line of a unified diff with its kind: "add", "del",
// "hunk", "file" or "" (context).
type diffLine struct {
	Kind string
	Text string
}

// diffLines splits a unified diff into lines classed for colouring.
func diffLines(d string) []diffLine {
	lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
	out := make([]diffLine, len(lines))
	for i, l := range lines {
		kind := ""
		switch {
		case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---"):
			kind = "file"
		case strings.HasPrefix(l, "+"):
			kind = "add"
		case strings.HasPrefix(l, "-"):
			kind = "del"
		case strings.HasPrefix(l, "@@"):
			kind = "hunk"
		}
		out[i] = diffLine{kind, l}
	}
	return out
}

// since renders t relative to now ("3m ago"); the zero time is "never".
func (u *UI) since(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := u.now().Sub(t)
	if d < 0 {
		return "in " + roughDuration(-d)
	}
	if d < 5*time.Second {
		return "just now"
	}
	return roughDuration(d) + " ago"
}

// roughDuration is d to one unit: 42s, 5m, 3h, 2d.
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// timestamp is t in UTC to the second; "—" for the zero time.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func timestampPtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return timestamp(*t)
}

// durationMS renders a millisecond count: 850ms, 2.4s, 3m05s.
func durationMS(ms int64) string {
	return humanDuration(time.Duration(ms) * time.Millisecond)
}

func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "—"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// span is the time from start to end; an unfinished span runs to now, and
// one that never started is "—".
func (u *UI) span(start, end *time.Time) string {
	if start == nil {
		return "—"
	}
	e := u.now()
	if end != nil {
		e = *end
	}
	return humanDuration(e.Sub(*start))
}

// shortCommit is the first 12 hex digits of a commit.
func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// shortID is the first 8 characters of an apply or task id (a UUID): enough
// to tell runs apart in a list that links to the full id.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// isoTime is t in RFC 3339 for <time datetime>.
func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// prettyJSON renders v as indented JSON. It is text: the template escapes
// it, so the encoder's own HTML escaping (\u003c) would only hurt reading.
func prettyJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// statusClass is the CSS class of a status ("st-error_locked"); anything
// but letters, digits and underscores is dropped so a stored value can
// never break out of the class attribute's meaning.
func statusClass(s string) string {
	var b strings.Builder
	b.WriteString("st-")
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 3 {
		b.WriteString("unknown")
	}
	return b.String()
}

// fact is one flattened soulprint entry.
type fact struct {
	Key   string
	Value string
}

// flattenFacts turns nested soulprint maps into sorted dotted keys
// ("os.family" = "debian"); lists and scalars render as JSON, strings bare.
func flattenFacts(m map[string]any) []fact {
	var out []fact
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 && prefix != "" {
				out = append(out, fact{prefix, "{}"})
			}
			for k, vv := range x {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				walk(key, vv)
			}
		case string:
			out = append(out, fact{prefix, x})
		default:
			b, err := json.Marshal(x)
			if err != nil {
				out = append(out, fact{prefix, fmt.Sprint(x)})
				return
			}
			out = append(out, fact{prefix, string(b)})
		}
	}
	walk("", m)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// lookupFact reads a dotted path ("os.family") of nested soulprint maps as
// text; "" when any step is missing or not a map.
func lookupFact(m map[string]any, path string) string {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = mm[k]
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
