package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
)

func init() { subcommands = append(subcommands, newAuditCmd) }

// newAuditCmd is `soulctl audit`: who changed what.
func newAuditCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "audit",
		Short: "Read the audit log (admin only)",
	}
	c.AddCommand(newAuditListCmd(g))
	return c
}

func newAuditListCmd(g *Globals) *cobra.Command {
	var q apitypes.AuditQuery
	c := &cobra.Command{
		Use:     "list [--archon ID] [--action TEXT] [--limit N]",
		Aliases: []string{"ls"},
		Short:   "List audit entries, newest first",
		Example: `  soulctl audit list --limit 20
  soulctl audit list --action "POST /v1/incarnations"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(q.Limit, maxListLimit, false); err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			es, err := cl.ListAudit(cmd.Context(), q)
			if err != nil {
				return err
			}
			if es == nil {
				es = []apitypes.AuditEntry{}
			}
			return g.Emit(cmd, es, func(w io.Writer) error {
				row(w, "TIME", "ARCHON", "ACTION", "TARGET", "SUMMARY")
				for _, e := range es {
					row(w, e.Time.Local().Format("2006-01-02 15:04:05"), dash(e.ArchonID), e.Action, dash(e.Target), clip(compactJSON(e.Summary), 80))
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&q.ArchonID, "archon", "", "only entries of this Archon id")
	c.Flags().StringVar(&q.Action, "action", "", `only this action, e.g. "POST /v1/services"`)
	c.Flags().IntVar(&q.Limit, "limit", 50, "at most this many entries")
	return c
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
