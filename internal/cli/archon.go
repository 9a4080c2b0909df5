package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { subcommands = append(subcommands, newArchonCmd) }

// newArchonCmd is `soulctl archon`: operator identities.
func newArchonCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "archon",
		Aliases: []string{"archons"},
		Short:   "Create and list Archons (operators) — admin only",
	}
	c.AddCommand(newArchonCreateCmd(g), newArchonListCmd(g))
	return c
}

func newArchonCreateCmd(g *Globals) *cobra.Command {
	var (
		req apiclient.CreateArchonRequest
		ttl string
	)
	c := &cobra.Command{
		Use:     "create [name] --role admin|operator|viewer [--ttl 30d]",
		Short:   "Create an Archon and issue its first token",
		Example: `  soulctl archon create alice --role operator`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(args, req.Name, "name")
			if err != nil {
				return err
			}
			req.Name = name
			if ttl != "" {
				d, err := apiclient.ParseDuration(ttl)
				if err != nil {
					return cmdutil.Usage(fmt.Errorf("--ttl: %w", err))
				}
				req.TTL = apiclient.Duration(d)
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			out, err := cl.CreateArchon(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.Emit(cmd, out, func(w io.Writer) error {
				row(w, "Archon:", out.Archon.Name+" ("+out.Archon.ID+")")
				row(w, "Role:", out.Archon.Role)
				return tokenDetail(w, out.Token)
			})
		},
	}
	addNameFlag(c, &req.Name, "name", "Archon name")
	c.Flags().StringVar(&req.Role, "role", "operator", "role: admin, operator or viewer")
	c.Flags().StringVar(&ttl, "ttl", "", "lifetime of the first token: 90m, 24h, 30d")
	_ = c.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"admin", "operator", "viewer"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func newArchonListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List Archons",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			as, err := cl.ListArchons(cmd.Context())
			if err != nil {
				return err
			}
			if as == nil {
				as = []store.Archon{}
			}
			return g.Emit(cmd, as, func(w io.Writer) error {
				row(w, "ID", "NAME", "ROLE", "CREATED")
				for _, a := range as {
					row(w, a.ID, a.Name, a.Role, ago(a.CreatedAt))
				}
				return nil
			})
		},
	}
}
