package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
)

// Kinds of names shell completion asks the Keeper for.
const (
	kindService     = "service"
	kindSoul        = "soul"
	kindIncarnation = "incarnation"
	kindRun         = "run"
)

// completeNames completes the first argument (and the --name/--sid/--id
// flag) of a command with names of kind read from the Keeper. Completion
// must never hang or print errors: a Keeper that does not answer within
// two seconds completes nothing.
func completeNames(g *Globals, kind string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cl, err := g.Client(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, _ := listNames(ctx, cl, kind)
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func listNames(ctx context.Context, cl *apiclient.Client, kind string) ([]string, error) {
	var names []string
	switch kind {
	case kindService:
		svcs, err := cl.ListServices(ctx)
		for _, s := range svcs {
			names = append(names, s.Name)
		}
		return names, err
	case kindSoul:
		souls, err := cl.ListSouls(ctx, apitypes.SoulQuery{})
		for _, s := range souls {
			names = append(names, s.SID)
		}
		return names, err
	case kindIncarnation:
		incs, err := listIncarnations(ctx, cl)
		for _, i := range incs.View {
			names = append(names, i.Name)
		}
		return names, err
	case kindRun:
		runs, err := listRuns(ctx, cl, "", 50)
		for _, r := range runs.View {
			names = append(names, r.ApplyID)
		}
		return names, err
	}
	return nil, nil
}

// withNames sets completion of a command's argument and of its name flag.
func withNames(g *Globals, c *cobra.Command, kind, flag string) *cobra.Command {
	f := completeNames(g, kind)
	c.ValidArgsFunction = f
	if c.Flags().Lookup(flag) != nil {
		_ = c.RegisterFlagCompletionFunc(flag, f)
	}
	return c
}

// completeFlag sets completion of a flag with names of kind.
func completeFlag(g *Globals, c *cobra.Command, flag, kind string) {
	f := completeNames(g, kind)
	_ = c.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return f(cmd, nil, toComplete)
	})
}
