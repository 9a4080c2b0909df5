// Package soulcmd is the command tree of the soul agent binary: one file per
// subcommand (run, apply, facts, swarm), each adding itself in init().
package soulcmd

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/version"
)

// subcommands are added by each subcommand file's init().
var subcommands []func() *cobra.Command

// Main runs the soul command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return exitCode(root.ExecuteContext(ctx), stderr)
}

// NewRoot builds the soul command tree (Main runs it; the man pages and
// shell completions are generated from it).
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "soul",
		Short:         "Soul Stack agent: runs idempotent modules on this host for a Keeper",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("soul {{.Version}}\n")
	for _, c := range subcommands {
		root.AddCommand(c())
	}
	return root
}
