package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newJoinTokenCmd) }

// newJoinTokenCmd is `soulctl join-token`: tokens souls onboard with.
func newJoinTokenCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "join-token",
		Short: "Create join tokens: a soul started with one is accepted with its covens",
	}
	c.AddCommand(newJoinTokenCreateCmd(g))
	return c
}

func newJoinTokenCreateCmd(g *Globals) *cobra.Command {
	var (
		covens []string
		ttl    string
		quiet  bool
	)
	c := &cobra.Command{
		Use:   "create --covens a,b [--ttl 24h]",
		Short: "Create a join token carrying covens",
		Long: `Creates a join token. A soul started with it (soul run --join-token …) is
accepted at once with these covens, and pins the Keeper's certificate by the
fingerprint the token carries. The token is shown once; -q prints it alone.`,
		Example: `  soulctl join-token create --covens prod,web --ttl 24h
  SOUL_JOIN_TOKEN=$(soulctl join-token create -q --covens prod) soul run --keeper https://keeper.example:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := apiclient.CreateJoinTokenRequest{Covens: covensFlag(covens)}
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
			jt, err := cl.CreateJoinToken(cmd.Context(), req)
			if err != nil {
				return err
			}
			if quiet && !g.capture {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), jt.Token)
				return err
			}
			return g.Emit(cmd, jt, func(w io.Writer) error {
				row(w, "ID:", jt.ID)
				row(w, "Covens:", list(jt.Covens))
				row(w, "Expires:", expires(jt.ExpiresAt))
				row(w, "Token:", jt.Token)
				fmt.Fprintln(w, "(the token is shown once: start souls with soul run --keeper URL --join-token TOKEN)")
				return nil
			})
		},
	}
	c.Flags().StringSliceVar(&covens, "covens", nil, "covens given to souls joining with the token (comma-separated)")
	c.Flags().StringVar(&ttl, "ttl", "", "lifetime: 90m, 24h, 30d (default 24h)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the token")
	return c
}
