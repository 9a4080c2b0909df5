package engine

import (
	"bytes"
	"context"
	"text/template/parse"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/store"
)

// readsFacts tells whether anything a run of sc evaluates can read the
// members' soulprints. When nothing can, prepare reads the members'
// covens only (store.GetSoulsBrief) and does not copy or decode their
// soulprints, which at 10,000+ members was most of a run's preparation
// and a large share of its garbage (bench/README.md §1).
//
// Facts reach a run of the Keeper in three ways only: CEL expressions
// (the soulprint root, and delegated_for = {sid, soulprint}), and
// core.file.rendered templates, whose data carries soulprint.self. The
// check is deliberately conservative, over every file of the scenario
// directory (tasks, includes, vars.yml, vars_files, templates): a file
// naming soulprint or delegated_for anywhere, even in a comment, or a
// template that uses its whole data ({{ . }}, {{ $ }}, {{ template "t" . }},
// or that does not parse) counts as reading facts. A false positive only
// costs the decoding every run did before.
func readsFacts(sc *dsl.Scenario) bool {
	for _, b := range sc.Files {
		if bytes.Contains(b, []byte("soulprint")) || bytes.Contains(b, []byte("delegated_for")) {
			return true
		}
		if bytes.Contains(b, []byte("{{")) && templateUsesWholeData(b) {
			return true
		}
	}
	return false
}

// templateUsesWholeData tells whether src, parsed as a Go text/template
// (functions unchecked), uses its data other than through a field chain:
// a bare dot or $ anywhere (inside range or with too: a false positive is
// harmless), or a parse error.
func templateUsesWholeData(src []byte) bool {
	t := parse.New("facts")
	t.Mode = parse.SkipFuncCheck
	trees := map[string]*parse.Tree{}
	if _, err := t.Parse(string(src), "", "", trees); err != nil {
		return true
	}
	for _, tr := range trees {
		if tr.Root != nil && nodeUsesWholeData(tr.Root) {
			return true
		}
	}
	return false
}

func nodeUsesWholeData(n parse.Node) bool {
	switch x := n.(type) {
	case *parse.DotNode:
		return true
	case *parse.VariableNode:
		return len(x.Ident) == 1 && x.Ident[0] == "$"
	case *parse.ListNode:
		return x != nil && anyUsesWholeData(x.Nodes)
	case *parse.ActionNode:
		return nodeUsesWholeData(x.Pipe)
	case *parse.PipeNode:
		if x == nil {
			return false
		}
		for _, c := range x.Cmds {
			if nodeUsesWholeData(c) {
				return true
			}
		}
		return false
	case *parse.CommandNode:
		return anyUsesWholeData(x.Args)
	case *parse.ChainNode:
		return nodeUsesWholeData(x.Node)
	case *parse.IfNode:
		return branchUsesWholeData(&x.BranchNode)
	case *parse.RangeNode:
		return branchUsesWholeData(&x.BranchNode)
	case *parse.WithNode:
		return branchUsesWholeData(&x.BranchNode)
	case *parse.TemplateNode:
		return nodeUsesWholeData(x.Pipe)
	}
	return false
}

func branchUsesWholeData(b *parse.BranchNode) bool {
	return nodeUsesWholeData(b.Pipe) || nodeUsesWholeData(b.List) || (b.ElseList != nil && nodeUsesWholeData(b.ElseList))
}

func anyUsesWholeData(ns []parse.Node) bool {
	for _, n := range ns {
		if nodeUsesWholeData(n) {
			return true
		}
	}
	return false
}

// readMembers reads the souls among sids: with their soulprints when the
// scenario can read facts, else only their covens.
func (r *runner) readMembers(ctx context.Context, sids []string) ([]store.Soul, error) {
	if r.factsRead {
		return r.e.cfg.Store.GetSouls(ctx, sids)
	}
	return r.e.cfg.Store.GetSoulsBrief(ctx, sids)
}
