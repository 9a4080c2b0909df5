package cli

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/ansibleimport"
	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/dsl"
)

func init() { subcommands = append(subcommands, newImportCmd) }

// newImportCmd is `soulctl import`: bring other tools' content over.
func newImportCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "import",
		Short: "Turn other tools' content into a service repository (offline)",
	}
	c.AddCommand(newImportAnsibleCmd(g))
	return c
}

// importSummary is what `import ansible -o json` prints.
type importSummary struct {
	Service     string               `json:"service"`
	Out         string               `json:"out"`
	Exact       int                  `json:"exact"`
	Approximate int                  `json:"approximated"`
	Manual      int                  `json:"manual"`
	Valid       bool                 `json:"valid"`
	Problems    []string             `json:"problems,omitempty"`
	Tasks       []*ansibleimport.Row `json:"tasks"`
}

func newImportAnsibleCmd(g *Globals) *cobra.Command {
	var out string
	var roleDirs []string
	c := &cobra.Command{
		Use:   "ansible ROLE_DIR|PLAYBOOK.yml --out DIR",
		Short: "Turn an Ansible role into a service repository, with a report of every task",
		Long: `Reads an Ansible role (tasks/ with includes and blocks, handlers/, defaults/,
vars/, templates/, files/, meta/argument_specs.yml) and writes a service
repository into --out (a new or empty directory): a destiny with the role's
tasks, its templates unchanged (Jinja), its defaults as typed input fed from
the essence, and scenario/create. IMPORT.md lists every upstream task as
exact, approximated (what is lost) or manual (why), with file:line on both
sides; manual tasks fail 'soulctl scenario validate' at their line until a
person decides. A playbook becomes scenario/site: each play a block
targeting its hosts: group as a coven (on:), with serial:, its tasks, and
its roles applied as destinies (found in roles/ beside the playbook or
under --roles DIR). Offline and deterministic: no Keeper is needed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.capture {
				return errLocalFiles("import ansible")
			}
			if out == "" {
				return cmdutil.Usage(fmt.Errorf("--out DIR is required: the directory to write the service repository into"))
			}
			sum, err := runImportAnsible(args[0], out, roleDirs)
			if err != nil {
				return err
			}
			return g.Emit(cmd, sum, func(w io.Writer) error { return sum.table(w) })
		},
	}
	c.Flags().StringVar(&out, "out", "", "directory to write the service repository into (new or empty)")
	c.Flags().StringSliceVar(&roleDirs, "roles", nil, "directories holding the roles a playbook names (besides roles/ beside it)")
	return c
}

func runImportAnsible(src, out string, roleDirs []string) (*importSummary, error) {
	var im *ansibleimport.Import
	if ansibleimport.IsPlaybook(src) {
		var err error
		if im, err = ansibleimport.ImportPlaybook(src, roleDirs); err != nil {
			return nil, cmdutil.Usage(fmt.Errorf("importing %s: %w", src, err))
		}
	} else {
		role, err := ansibleimport.LoadRole(src)
		if err != nil {
			return nil, cmdutil.Usage(err)
		}
		if im, err = ansibleimport.ImportRole(role); err != nil {
			return nil, cmdutil.Failed(fmt.Errorf("importing %s: %w", src, err))
		}
	}
	if err := im.WriteTo(out); err != nil {
		return nil, cmdutil.Failed(fmt.Errorf("writing %s: %w", out, err))
	}
	_, problems := dsl.Load(out)
	n := im.Counts()
	sum := &importSummary{Service: im.Name, Out: out, Exact: n[ansibleimport.Exact], Approximate: n[ansibleimport.Approximated],
		Manual: n[ansibleimport.Manual], Valid: len(problems) == 0, Tasks: im.Rows}
	for _, p := range problems {
		p.Pos.File = filepath.Join(out, p.Pos.File)
		sum.Problems = append(sum.Problems, p.String())
	}
	return sum, nil
}

// table is the human form: the counts, then what stops validation.
func (s *importSummary) table(w io.Writer) error {
	fmt.Fprintf(w, "imported %s into %s: %d tasks, %d exact, %d approximated, %d manual (see %s)\n",
		s.Service, s.Out, len(s.Tasks), s.Exact, s.Approximate, s.Manual, filepath.Join(s.Out, "IMPORT.md"))
	if s.Valid {
		fmt.Fprintf(w, "soulctl scenario validate %s: ok\n", s.Out)
		return nil
	}
	fmt.Fprintf(w, "soulctl scenario validate %s: %d problems until the manual tasks are decided:\n", s.Out, len(s.Problems))
	for _, p := range s.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	return nil
}
