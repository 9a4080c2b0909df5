package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newArchonCmd) }

// newArchonCmd is `soulctl archon`: operator identities.
func newArchonCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "archon",
		Aliases: []string{"archons"},
		Short:   "Create, list, disable and enable Archons (operators) — admin only",
	}
	c.AddCommand(newArchonCreateCmd(g), newArchonListCmd(g), newArchonDisableCmd(g), newArchonEnableCmd(g))
	return c
}

func newArchonCreateCmd(g *Globals) *cobra.Command {
	var (
		req apitypes.CreateArchonRequest
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
				d, err := apitypes.ParseDuration(ttl)
				if err != nil {
					return cmdutil.Usage(fmt.Errorf("--ttl: %w", err))
				}
				req.TTL = apitypes.Duration(d)
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
	c.Flags().StringVar(&req.Role, "role", "operator", "role on the whole keeper: admin, operator, auditor, viewer, or none (powers from grants only)")
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
				as = []apitypes.Archon{}
			}
			return g.Emit(cmd, as, func(w io.Writer) error {
				row(w, "ID", "NAME", "ROLE", "STATUS", "CREATED")
				for _, a := range as {
					status := "enabled"
					if a.DisabledAt != nil {
						status = "disabled " + ago(*a.DisabledAt)
					}
					row(w, a.ID, a.Name, a.Role, status, ago(a.CreatedAt))
				}
				return nil
			})
		},
	}
}

// Help of archon disable and archon enable.
const (
	archonDisableLong = `Disables an Archon: each of its tokens — including any a leaked token
minted — is refused from its next request on, until it is enabled again.
The last enabled admin cannot be disabled. Before enabling a compromised
Archon again, revoke the tokens you do not trust (soulctl token list
--archon NAME, soulctl token revoke ID).`
	archonEnableLong = `Enables a disabled Archon: its tokens that are neither revoked nor
expired work again.`
)

func newArchonDisableCmd(g *Globals) *cobra.Command {
	return newArchonSwitchCmd(g, "disable", "Disable an Archon: every one of its tokens is refused at once", archonDisableLong,
		(*apiclient.Client).DisableArchon)
}

func newArchonEnableCmd(g *Globals) *cobra.Command {
	return newArchonSwitchCmd(g, "enable", "Enable a disabled Archon again", archonEnableLong,
		(*apiclient.Client).EnableArchon)
}

// newArchonSwitchCmd is `archon disable` or `archon enable` (verb), which
// call call with the Archon's id.
func newArchonSwitchCmd(g *Globals, verb, short, long string,
	call func(*apiclient.Client, context.Context, string) (apitypes.Archon, error)) *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:     verb + " [archon-id-or-name]",
		Short:   short,
		Long:    long,
		Example: "  soulctl archon " + verb + " alice",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, cl, err := g.nameAndClient(cmd, args, id, "id")
			if err != nil {
				return err
			}
			a, err := call(cl, cmd.Context(), archonID(cmd.Context(), cl, ref))
			if err != nil {
				return err
			}
			return g.Emit(cmd, a, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "archon %s (%s) %sd\n", a.Name, a.ID, verb)
				return err
			})
		},
	}
	addNameFlag(c, &id, "id", "Archon id or name")
	return c
}

// archonID resolves an Archon name to its id when the caller may list
// Archons and one has that name; anything else is taken as an id.
func archonID(ctx context.Context, cl *apiclient.Client, ref string) string {
	as, err := cl.ListArchons(ctx)
	if err != nil {
		return ref
	}
	for _, a := range as {
		if a.ID == ref {
			return ref
		}
	}
	for _, a := range as {
		if a.Name == ref {
			return a.ID
		}
	}
	return ref
}
