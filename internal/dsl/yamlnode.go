package dsl

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/textutil"
)

// maxNodes bounds the YAML nodes visited while loading one repository:
// alias expansion can otherwise grow exponentially.
const maxNodes = 2_000_000

var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// parseYAML decodes data into its root node. An empty document yields a
// nil node; ok is false when the YAML is invalid (already reported).
func (p *parser) parseYAML(file string, data []byte) (root *yaml.Node, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			p.add(Pos{File: file, Line: 1, Col: 1}, "", fmt.Sprintf("cannot parse YAML: %v", r))
			root, ok = nil, false
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := 1, err.Error()
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			if m[1] != "" {
				line, _ = strconv.Atoi(m[1])
			}
			msg = m[2]
		}
		line, col := problemLine(data, line)
		text := ""
		if lines := strings.Split(string(data), "\n"); line >= 1 && line <= len(lines) {
			text = lines[line-1]
		}
		p.add(Pos{File: file, Line: line, Col: col}, "", "invalid YAML: "+msg+yamlHint(msg, text))
		return nil, false
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, true
	}
	return doc.Content[0], true
}

// maxRescanLines bounds the search for the line a YAML error is on.
const maxRescanLines = 1000

// problemLine finds the line a YAML error is really on. yaml.v3 reports the
// line where the enclosing construct started (for an indentation error in
// a list, the line of the list's key), so the first prefix of the document
// from that line on that fails to parse marks the offending line. The
// column is the line's first non-blank character.
func problemLine(data []byte, reported int) (int, int) {
	lines := strings.SplitAfter(string(data), "\n")
	if reported < 1 || reported > len(lines) || len(lines) > maxRescanLines {
		return max(reported, 1), 1
	}
	for n := reported; n <= len(lines); n++ {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &doc) != nil {
			l := lines[n-1]
			return n, len(l) - len(strings.TrimLeft(l, " \t")) + 1
		}
	}
	return reported, 1
}

// colonInValueRE matches "key: value" where the unquoted value itself holds
// ": " (a CEL predicate comparing with a string such as "a: b").
var colonInValueRE = regexp.MustCompile(`^\s*(?:-\s+)?([A-Za-z_][\w.]*):\s+([^'"\s].*:\s.*)$`)

// yamlHint adds advice for the classic YAML traps; line is the text of the
// offending line.
func yamlHint(msg, line string) string {
	switch {
	case strings.Contains(msg, "mapping values are not allowed") && colonInValueRE.MatchString(line):
		m := colonInValueRE.FindStringSubmatch(line)
		return fmt.Sprintf(` (the value of %s: holds ": ", which YAML reads as the start of another key, not indentation: quote the whole value, e.g. %s: '%s')`, m[1], m[1], strings.ReplaceAll(strings.TrimSpace(m[2]), "'", "''"))
	case strings.Contains(msg, "mapping values are not allowed"),
		strings.Contains(msg, "did not find expected key"),
		strings.Contains(msg, "did not find expected '-' indicator"):
		return " (check the indentation of this line and the one above)"
	case strings.Contains(msg, "found character that cannot start any token"):
		return " (tabs are not allowed for indentation; quote values starting with @ or `)"
	}
	return ""
}

// posOf returns the position of node n in file.
func posOf(file string, n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: file}
	}
	return Pos{File: file, Line: n.Line, Col: n.Column}
}

// deref follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// entry is one key of a mapping node.
type entry struct {
	key   string
	kpos  Pos
	value *yaml.Node
}

// mapping returns the entries of a mapping node in order, reporting a
// non-mapping node, non-scalar keys and duplicate keys. ok is false when n
// is not a mapping.
func (p *parser) mapping(file string, n *yaml.Node, what string) ([]entry, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		p.add(posOf(file, n), "", fmt.Sprintf("%s must be a map, got %s", what, kindName(n)))
		return nil, false
	}
	seen := map[string]Pos{}
	out := make([]entry, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		kp := posOf(file, k)
		if k == nil || k.Kind != yaml.ScalarNode {
			p.add(kp, "", fmt.Sprintf("%s: keys must be strings", what))
			continue
		}
		if k.Tag == "!!merge" || k.Value == "<<" {
			p.add(kp, "<<", "YAML merge keys (<<) are not supported: write the keys out")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.add(kp, k.Value, fmt.Sprintf("duplicate key %s (first at line %d)", k.Value, first.Line))
			continue
		}
		seen[k.Value] = kp
		out = append(out, entry{key: k.Value, kpos: kp, value: v})
	}
	return out, true
}

// sequence returns the items of a sequence node, reporting anything else.
func (p *parser) sequence(file string, n *yaml.Node, what string) ([]*yaml.Node, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		p.add(posOf(file, n), "", fmt.Sprintf("%s must be a list, got %s", what, kindName(n)))
		return nil, false
	}
	return n.Content, true
}

// str returns a scalar string value, reporting anything else. Numbers and
// booleans are refused: a key that takes a string takes exactly that.
func (p *parser) str(file string, n *yaml.Node, key string) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "") {
		p.add(posOf(file, n), key, fmt.Sprintf("%s must be a string, got %s", key, kindName(n)))
		return "", false
	}
	return n.Value, true
}

// boolean returns a scalar boolean value.
func (p *parser) boolean(file string, n *yaml.Node, key string) (bool, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		p.add(posOf(file, n), key, fmt.Sprintf("%s must be true or false, got %s", key, kindName(n)))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		p.add(posOf(file, n), key, fmt.Sprintf("%s: %v", key, err))
		return false, false
	}
	return b, true
}

// kindName describes a node for error messages.
func kindName(n *yaml.Node) string {
	n = deref(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!bool":
			return "boolean " + n.Value
		case "!!int":
			return "integer " + n.Value
		case "!!float":
			return "number " + n.Value
		case "!!str", "":
			v := n.Value
			if len(v) > 40 {
				v = v[:40] + "…"
			}
			return strconv.Quote(v)
		}
		return n.Tag + " " + n.Value
	}
	return "an unsupported YAML node"
}

// value converts a node into plain Go values: map[string]any, []any,
// string, int, float64, bool, nil. Timestamps and other tags stay strings.
func (p *parser) value(file string, n *yaml.Node) any {
	v, ok := p.valueRec(file, n, 0)
	if !ok {
		return nil
	}
	return v
}

func (p *parser) valueRec(file string, n *yaml.Node, depth int) (any, bool) {
	n = deref(n)
	if !p.spend(file, n) {
		return nil, false
	}
	if depth > 100 {
		p.add(posOf(file, n), "", "value is nested more than 100 levels deep")
		return nil, false
	}
	if n == nil {
		return nil, true
	}
	switch n.Kind {
	case yaml.MappingNode:
		ents, ok := p.mapping(file, n, "value")
		if !ok {
			return nil, false
		}
		m := make(map[string]any, len(ents))
		keys := make([]string, 0, len(ents))
		for _, e := range ents {
			v, ok := p.valueRec(file, e.value, depth+1)
			if !ok {
				return nil, false
			}
			if _, dup := m[e.key]; !dup {
				keys = append(keys, e.key)
			}
			m[e.key] = v
		}
		p.order.Add(keys)
		return m, true
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, ok := p.valueRec(file, c, depth+1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
		}
		return l, true
	case yaml.ScalarNode:
		return scalarValue(n), true
	}
	p.add(posOf(file, n), "", "unsupported YAML node")
	return nil, false
}

func scalarValue(n *yaml.Node) any {
	switch n.Tag {
	case "!!null":
		return nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err == nil {
			return v
		}
	}
	return n.Value
}

// spend takes one node from the repository's budget; once it is exhausted
// the repository is reported (once) as too large.
func (p *parser) spend(file string, n *yaml.Node) bool {
	p.nodes++
	if p.nodes == maxNodes+1 {
		p.add(posOf(file, n), "", fmt.Sprintf("the repository expands to more than %d YAML nodes (YAML aliases are expanded): simplify it", maxNodes))
	}
	return p.nodes <= maxNodes
}

// walkStrings calls fn for every string scalar under n with its position
// and a dotted path below prefix. Like value, it stops after maxNodes nodes
// (value reports the oversized document).
func (p *parser) walkStrings(file string, n *yaml.Node, prefix string, fn func(pos Pos, path, s string)) {
	p.walkStringNodes(file, n, prefix, func(n *yaml.Node, path string) { fn(posOf(file, n), path, n.Value) })
}

// walkStringNodes is walkStrings handing over the scalar node itself.
func (p *parser) walkStringNodes(file string, n *yaml.Node, prefix string, fn func(n *yaml.Node, path string)) {
	var rec func(n *yaml.Node, path string, depth int)
	rec = func(n *yaml.Node, path string, depth int) {
		n = deref(n)
		if n == nil || depth > 100 || !p.spend(file, n) {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				rec(n.Content[i+1], joinKey(path, n.Content[i].Value), depth+1)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				rec(c, fmt.Sprintf("%s[%d]", path, i), depth+1)
			}
		case yaml.ScalarNode:
			if n.Tag == "!!str" || n.Tag == "" {
				fn(n, path)
			}
		}
	}
	rec(n, prefix, 0)
}

func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// suggest returns " (did you mean x?)" for the closest candidate, or "".
func suggest(word string, candidates []string) string { return textutil.Suggest(word, candidates) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nodeAt follows a JSON pointer's tokens from n (map keys and list
// indexes), stopping at the deepest node that exists.
func nodeAt(n *yaml.Node, tokens []string) *yaml.Node {
	n = deref(n)
	for _, tok := range tokens {
		if n == nil {
			break
		}
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					next = n.Content[i+1]
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
		}
		if next == nil {
			break
		}
		n = deref(next)
	}
	return n
}
