// Package cli is the soulctl command tree (cobra), one file per verb. The
// same tree is the Checker's apicall language, run in-process.
package cli

import (
	"context"
	"io"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/spf13/cobra"
)

// subcommands are added by each verb file's init().
var subcommands []func(*Globals) *cobra.Command

// Globals are the flags every soulctl command shares.
type Globals struct {
	Keeper string
	Token  string
	Output string // table|json|yaml
}

// NewRoot builds the soulctl command tree.
func NewRoot(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "soulctl",
		Short:         "Soul Stack command line for Archons",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.Keeper, "keeper", "", "Keeper URL (env SOULCTL_KEEPER)")
	root.PersistentFlags().StringVar(&g.Token, "token", "", "Archon JWT (env SOULCTL_TOKEN)")
	root.PersistentFlags().StringVarP(&g.Output, "output", "o", "table", "output format: table|json|yaml")
	for _, c := range subcommands {
		root.AddCommand(c(g))
	}
	return root
}

// Main runs soulctl and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &Globals{}
	root := NewRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return cmdutil.Code(root.ExecuteContext(ctx), stderr)
}
