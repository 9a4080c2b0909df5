package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
)

func init() { subcommands = append(subcommands, newSoulsCmd) }

// newSoulsCmd is `soulctl souls`: the registry of hosts.
func newSoulsCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "souls",
		Aliases: []string{"soul"},
		Short:   "List, inspect, accept, reject, delete and rekey souls; set their covens",
	}
	c.AddCommand(newSoulsListCmd(g), newSoulsBootstrapCmd(g))
	for _, sub := range []*cobra.Command{newSoulsShowCmd(g), newSoulsAcceptCmd(g), newSoulsRejectCmd(g), newSoulsCovensCmd(g),
		newSoulsDeleteCmd(g), newSoulsRekeyCmd(g), newSoulsVitalsCmd(g)} {
		c.AddCommand(withNames(g, sub, kindSoul, "sid"))
	}
	return c
}

func newSoulsListCmd(g *Globals) *cobra.Command {
	var q apitypes.SoulQuery
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List souls, sorted by SID",
		Example: `  soulctl souls list
  soulctl souls list --status pending
  soulctl souls list --coven web -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			q.Covens = covensFlag(q.Covens)
			souls, err := cl.ListSouls(cmd.Context(), q)
			if err != nil {
				return err
			}
			if souls == nil {
				souls = []apitypes.Soul{}
			}
			return g.Emit(cmd, souls, func(w io.Writer) error {
				row(w, "SID", "STATUS", "COVENS", "OS", "ADDRESS", "VERSION", "LAST SEEN")
				for _, s := range souls {
					row(w, s.SID, s.Status, list(s.Covens), osOf(s.Soulprint), dash(fact(s.Soulprint, "network", "primary_ip")), dash(s.Version), ago(s.LastSeen))
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&q.Status, "status", "", "only souls with this status: pending, connected, disconnected, rejected")
	c.Flags().StringSliceVar(&q.Covens, "coven", nil, "only souls carrying all these covens (repeat or comma-separate)")
	_ = c.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(
		[]string{apitypes.SoulPending, apitypes.SoulConnected, apitypes.SoulDisconnected, apitypes.SoulRejected}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func newSoulsShowCmd(g *Globals) *cobra.Command {
	var sid string
	c := &cobra.Command{
		Use:   "show [sid]",
		Short: "Show one soul with its soulprint",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, cl, err := g.nameAndClient(cmd, args, sid, "sid")
			if err != nil {
				return err
			}
			s, err := cl.GetSoul(cmd.Context(), id)
			if err != nil {
				return err
			}
			return g.Emit(cmd, s, func(w io.Writer) error { return soulDetail(w, s) })
		},
	}
	addNameFlag(c, &sid, "sid", "soul SID")
	return c
}

func newSoulsAcceptCmd(g *Globals) *cobra.Command {
	var (
		sid    string
		covens []string
		key    string
	)
	c := &cobra.Command{
		Use:   "accept [sid] [--covens a,b] [--key sha256:…]",
		Short: "Accept a pending soul into covens",
		Long: `Accepts a pending (or rejected) soul into covens. Anyone who reaches the
Keeper can say hello under any SID, so give --key: the fingerprint the soul
logs while it waits ("soul is pending acceptance … key=sha256:…"); a soul
holding another key is not accepted. souls show prints the key it holds.`,
		Example: `  soulctl souls accept web-07.example.com --covens prod,web --key sha256:3f2a…`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, cl, err := g.nameAndClient(cmd, args, sid, "sid")
			if err != nil {
				return err
			}
			s, err := cl.AcceptSoulKey(cmd.Context(), id, covensFlag(covens), key)
			if err != nil {
				return err
			}
			return g.Emit(cmd, s, func(w io.Writer) error { return soulLine(w, "accepted", s) })
		},
	}
	addNameFlag(c, &sid, "sid", "soul SID")
	c.Flags().StringSliceVar(&covens, "covens", nil, "covens of the soul (comma-separated)")
	c.Flags().StringVar(&key, "key", "", "accept only if the soul holds the key with this fingerprint (from the soul's log)")
	return c
}

func newSoulsRejectCmd(g *Globals) *cobra.Command {
	var sid string
	c := &cobra.Command{
		Use:   "reject [sid]",
		Short: "Reject a soul: it is refused until accepted again",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, cl, err := g.nameAndClient(cmd, args, sid, "sid")
			if err != nil {
				return err
			}
			s, err := cl.RejectSoul(cmd.Context(), id)
			if err != nil {
				return err
			}
			return g.Emit(cmd, s, func(w io.Writer) error { return soulLine(w, "rejected", s) })
		},
	}
	addNameFlag(c, &sid, "sid", "soul SID")
	return c
}

func newSoulsCovensCmd(g *Globals) *cobra.Command {
	var (
		sid    string
		covens []string
	)
	c := &cobra.Command{
		Use:   "covens [sid] [--set a,b]",
		Short: "Show a soul's covens, or replace them with --set",
		Long: `Without --set, prints the soul's covens. With --set, replaces them (an empty
--set "" removes all). Incarnations keep their members: covens select hosts
when an incarnation is created or members are added.`,
		Example: `  soulctl souls covens dev-soul-1
  soulctl souls covens dev-soul-1 --set dev,web`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, cl, err := g.nameAndClient(cmd, args, sid, "sid")
			if err != nil {
				return err
			}
			var s apitypes.Soul
			if cmd.Flags().Changed("set") {
				s, err = cl.SetSoulCovens(cmd.Context(), id, covensFlag(covens))
			} else {
				s, err = cl.GetSoul(cmd.Context(), id)
			}
			if err != nil {
				return err
			}
			cv := s.Covens
			if cv == nil {
				cv = []string{}
			}
			return g.Emit(cmd, map[string]any{"sid": s.SID, "covens": cv}, func(w io.Writer) error {
				row(w, "SID", "COVENS")
				row(w, s.SID, list(s.Covens))
				return nil
			})
		},
	}
	addNameFlag(c, &sid, "sid", "soul SID")
	c.Flags().StringSliceVar(&covens, "set", nil, "replace the covens with these (comma-separated)")
	return c
}

// soulLine is the table form of a soul after a change.
func soulLine(w io.Writer, verb string, s apitypes.Soul) error {
	_, err := fmt.Fprintf(w, "soul %s %s: status %s, covens %s\n", s.SID, verb, s.Status, list(s.Covens))
	return err
}

// soulDetail is the table form of one soul.
func soulDetail(w io.Writer, s apitypes.Soul) error {
	row(w, "SID:", s.SID)
	row(w, "Status:", s.Status)
	row(w, "Key:", domain.KeyFingerprint(s.PublicKey))
	row(w, "Covens:", list(s.Covens))
	row(w, "OS:", osOf(s.Soulprint))
	row(w, "Address:", dash(fact(s.Soulprint, "network", "primary_ip")))
	row(w, "Version:", dash(s.Version))
	row(w, "Last seen:", stamp(s.LastSeen))
	row(w, "Registered:", stamp(s.CreatedAt))
	fmt.Fprintln(w, "Soulprint:")
	return writeMapYAML(w, "  ", s.Soulprint)
}

// fact reads a string fact at path in a soulprint ("" when absent).
func fact(sp map[string]any, path ...string) string {
	var cur any = sp
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	switch v := cur.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// osOf summarizes the OS facts: "debian 12 amd64".
func osOf(sp map[string]any) string {
	s := fact(sp, "os", "name")
	if v := fact(sp, "os", "version"); v != "" {
		s += " " + v
	}
	if a := fact(sp, "os", "arch"); a != "" {
		s += " " + a
	}
	if s == "" {
		return "-"
	}
	return s
}
