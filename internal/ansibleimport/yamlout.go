package ansibleimport

import (
	"bytes"

	"go.yaml.in/yaml/v3"
)

// omap builds an ordered YAML map: the importer writes keys in the order a
// person reads a task (name, module, params, when, …).
type omap struct{ n *yaml.Node }

func newMap() omap { return omap{&yaml.Node{Kind: yaml.MappingNode}} }

// set appends key: v; comment, when not empty, is written after the value
// on its line (a scalar) or above the key (a map or list).
func (m omap) set(key string, v any, comment string) {
	k := &yaml.Node{Kind: yaml.ScalarNode, Value: key}
	val := toNode(v)
	if comment != "" {
		if val.Kind == yaml.ScalarNode {
			val.LineComment = comment
		} else {
			k.HeadComment = comment
		}
	}
	m.n.Content = append(m.n.Content, k, val)
}

func (m omap) empty() bool { return len(m.n.Content) == 0 }

// toNode turns a Go value (or an omap or a *yaml.Node) into a YAML node;
// maps of plain Go values are written with sorted keys.
func toNode(v any) *yaml.Node {
	switch x := v.(type) {
	case omap:
		return x.n
	case *yaml.Node:
		return x
	case []*yaml.Node:
		return &yaml.Node{Kind: yaml.SequenceNode, Content: x}
	case []omap:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		for _, m := range x {
			s.Content = append(s.Content, m.n)
		}
		return s
	}
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: "<unencodable>"}
	}
	return n
}

// marshal writes n as a YAML document with two-space indentation.
func marshal(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// lines maps each node of tree to its line once tree is written and read
// back: the encoder does not set lines on the nodes it writes.
func lines(tree *yaml.Node) (map[*yaml.Node]int, error) {
	b, err := marshal(tree)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := map[*yaml.Node]int{}
	var walk func(a, b *yaml.Node)
	walk = func(a, b *yaml.Node) {
		out[a] = b.Line
		for i := 0; i < len(a.Content) && i < len(b.Content); i++ {
			walk(a.Content[i], b.Content[i])
		}
	}
	walk(tree, docRoot(&doc))
	return out, nil
}
