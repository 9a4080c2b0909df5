package jinja

import (
	"io"

	controlstructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
)

// execute renders t as Jinja does, which gonja's Template.Execute does
// not for a template that extends another: Jinja runs the child's
// top-level statements outside its blocks (imports, set, macros) before
// the parent renders, so the blocks the child overrides see them. gonja
// renders only the root-most parent, and a child's
// `{% import "x.j2" as m %}` is undefined inside its blocks. Their output
// is discarded, as in Jinja.
func execute(t *exec.Template, env *exec.Environment, cfg *config.Config, loader loaders.Loader, out io.Writer, data *exec.Context) error {
	r := exec.NewRenderer(&exec.Environment{
		Tests:             env.Tests,
		Filters:           env.Filters,
		ControlStructures: env.ControlStructures,
		Context:           env.Context.Inherit().Update(data),
		Methods:           env.Methods,
	}, out, cfg, loader, t)
	r.Output = io.Discard
	for n := t.Root(); n.Parent != nil; n = n.Parent {
		for _, node := range n.Nodes {
			csb, ok := node.(*nodes.ControlStructureBlock)
			if !ok {
				continue
			}
			switch csb.ControlStructure.(type) {
			case *controlstructures.ImportControlStructure, *controlstructures.FromImportControlStructure,
				*controlstructures.SetControlStructure, *controlstructures.MacroControlStructure:
				if _, err := r.Visit(csb); err != nil {
					return err
				}
			}
		}
	}
	r.Output = out
	return r.Execute()
}
