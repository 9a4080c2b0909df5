// Package soulcmd is the command tree of the soul agent binary: one file per
// subcommand (run, apply, facts, swarm), each adding itself in init().
package soulcmd

import (
	"context"
	"io"

	"github.com/spf13/cobra"
)

// subcommands are added by each subcommand file's init().
var subcommands []func() *cobra.Command

// Main runs the soul command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "soul",
		Short:         "Soul Stack agent: runs idempotent modules on this host for a Keeper",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range subcommands {
		root.AddCommand(c())
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return exitCode(root.ExecuteContext(ctx), stderr)
}
