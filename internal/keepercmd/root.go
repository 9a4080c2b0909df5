// Package keepercmd is the command tree of the keeper binary: one file per
// subcommand (init, serve, dev), each adding itself in init().
package keepercmd

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/version"
)

// subcommands are added by each subcommand file's init().
var subcommands []func() *cobra.Command

// Main runs the keeper command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return exitCode(root.ExecuteContext(ctx), stderr)
}

// NewRoot builds the keeper command tree (Main runs it; the man pages and
// shell completions are generated from it).
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "keeper",
		Short:         "Soul Stack Keeper: Operator API, web UI, run engine, soul gateway, Checker",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("keeper {{.Version}}\n")
	for _, c := range subcommands {
		root.AddCommand(c())
	}
	return root
}
