package jinja

import (
	"fmt"
	"runtime"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// MaxMacroDepth bounds the nesting of macro calls: a macro that calls
// itself without end would otherwise overflow the Go stack, which kills
// the process.
const MaxMacroDepth = 256

// maxStackFrames bounds the Go stack when a template is included: an
// include of itself would otherwise overflow it.
const maxStackFrames = 20_000

// guardedMacro defines a macro as gonja does, then wraps it with a depth
// count.
type guardedMacro struct {
	exec.ControlStructure
	name string
}

func (g *guardedMacro) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	if err := g.ControlStructure.Execute(r, tag); err != nil {
		return err
	}
	v, ok := r.Environment.Context.Get(g.name)
	m, isMacro := v.(exec.Macro)
	if !ok || !isMacro {
		return nil
	}
	depth := 0
	r.Environment.Context.Set(g.name, exec.Macro(func(params *exec.VarArgs) *exec.Value {
		if depth >= MaxMacroDepth {
			return errValue("macro "+g.name, "called %d levels deep, over the limit of %d (a macro that calls itself without end?)", depth, MaxMacroDepth)
		}
		depth++
		defer func() { depth-- }()
		return m(params)
	}))
	return nil
}

// macroParser is gonja's macro tag with guardedMacro.
func macroParser(inner parser.ControlStructureParser) parser.ControlStructureParser {
	return func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := inner(p, args)
		if err != nil {
			return cs, err
		}
		mcs, ok := cs.(*controlStructures.MacroControlStructure)
		if !ok {
			return cs, nil
		}
		return &guardedMacro{ControlStructure: mcs, name: mcs.Name}, nil
	}
}

// checkStack refuses to go deeper once the Go stack holds maxStackFrames.
func checkStack(name string) error {
	pcs := make([]uintptr, maxStackFrames+1)
	if runtime.Callers(0, pcs) > maxStackFrames {
		return fmt.Errorf("including %s: templates include each other too deeply (a template that includes itself?)", name)
	}
	return nil
}
