package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newJoinTokenCmd) }

// newJoinTokenCmd is `soulctl join-token`: tokens souls onboard with.
func newJoinTokenCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "join-token",
		Short: "Create, list and revoke join tokens: a soul started with one is accepted with its covens",
	}
	c.AddCommand(newJoinTokenCreateCmd(g), newJoinTokenListCmd(g), newJoinTokenRevokeCmd(g))
	return c
}

func newJoinTokenCreateCmd(g *Globals) *cobra.Command {
	var (
		covens  []string
		ttl     string
		maxUses int
		quiet   bool
	)
	c := &cobra.Command{
		Use:   "create --covens a,b [--ttl 24h] [--max-uses N]",
		Short: "Create a join token carrying covens",
		Long: `Creates a join token. A soul installed with it (the Keeper's install.sh, the
token in sh's environment: see the line printed) is accepted at once with
these covens, and pins the Keeper's certificate by the fingerprint the token
carries. Keep the token off command lines: every local user of a host can
read them in the process list. --max-uses N lets at most N souls join with
it (default: any number until it expires or is revoked). The token is shown
once; -q prints it alone.`,
		Example: `  soulctl join-token create --covens prod,web --ttl 24h
  soulctl join-token create --covens prod,db --ttl 1h --max-uses 3
  soulctl join-token create -q --covens prod --max-uses 1 > token   # -q: the token alone`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxUses < 0 {
				return cmdutil.Usage(fmt.Errorf("--max-uses must be positive (or 0 for no limit), not %d", maxUses))
			}
			req := apitypes.CreateJoinTokenRequest{Covens: covensFlag(covens), MaxUses: maxUses}
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
			jt, err := cl.CreateJoinToken(cmd.Context(), req)
			if err != nil {
				return err
			}
			if quiet && !g.capture {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), jt.Token)
				return err
			}
			pin := ""
			if v, err := cl.Version(cmd.Context()); err == nil {
				pin = v.TLSPin
			}
			return g.Emit(cmd, jt, func(w io.Writer) error {
				row(w, "ID:", jt.ID)
				row(w, "Covens:", list(jt.Covens))
				row(w, "Expires:", expires(jt.ExpiresAt))
				row(w, "Max uses:", maxUsesText(jt.MaxUses))
				row(w, "Token:", jt.Token)
				fmt.Fprintln(w, "(the token is shown once) Install a soul with it, as root on the new host:")
				fmt.Fprintln(w, "  "+installLine(cl.BaseURL(), pin, jt.Token))
				return nil
			})
		},
	}
	c.Flags().StringSliceVar(&covens, "covens", nil, "covens given to souls joining with the token (comma-separated)")
	c.Flags().StringVar(&ttl, "ttl", "", "lifetime: 90m, 24h, 30d (default 24h)")
	c.Flags().IntVar(&maxUses, "max-uses", 0, "how many souls may join with it (default 0: no limit)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the token")
	return c
}

func newJoinTokenListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List join tokens with their uses (never their secrets)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			ts, err := cl.ListJoinTokens(cmd.Context())
			if err != nil {
				return err
			}
			if ts == nil {
				ts = []apitypes.JoinToken{}
			}
			return g.Emit(cmd, ts, func(w io.Writer) error {
				row(w, "ID", "COVENS", "USES", "STATUS", "EXPIRES", "CREATED")
				for _, t := range ts {
					uses := strconv.Itoa(t.Uses)
					if t.MaxUses > 0 {
						uses += "/" + strconv.Itoa(t.MaxUses)
					}
					row(w, t.ID, list(t.Covens), uses, joinTokenStatus(t, now()), ago(t.ExpiresAt), ago(t.CreatedAt))
				}
				return nil
			})
		},
	}
}

func newJoinTokenRevokeCmd(g *Globals) *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:   "revoke [join-token-id]",
		Short: "Revoke a join token: souls presenting it are no longer accepted",
		Long: `Revokes a join token at once, whatever its expiry and uses left. Souls that
already joined with it stay accepted (reject them with soulctl souls reject).`,
		Example: `  soulctl join-token revoke 3f2c…`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			jid, cl, err := g.nameAndClient(cmd, args, id, "id")
			if err != nil {
				return err
			}
			if err := cl.RevokeJoinToken(cmd.Context(), jid); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]any{"id": jid, "revoked": true}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "join token %s revoked\n", jid)
				return err
			})
		},
	}
	addNameFlag(c, &id, "id", "join token id")
	return c
}

// joinTokenStatus is whether a join token still lets souls in at now.
func joinTokenStatus(t apitypes.JoinToken, now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case !now.Before(t.ExpiresAt):
		return "expired"
	case t.MaxUses > 0 && t.Uses >= t.MaxUses:
		return "used up"
	default:
		return "active"
	}
}

// installLine is the README's install command for a Keeper at keeperURL
// with token: the token in sh's environment, never on a command line, and
// a failed download failing the line.
func installLine(keeperURL, pin, token string) string {
	pinOpt := ""
	if pin != "" {
		pinOpt = " --pinnedpubkey '" + pin + "'"
	}
	return "{ curl -fsSL -k" + pinOpt + " " + strings.TrimRight(keeperURL, "/") + "/install.sh || echo exit 1; } | SOUL_JOIN_TOKEN='" + token + "' sh"
}

// maxUsesText renders a join token's use limit.
func maxUsesText(n int) string {
	if n <= 0 {
		return "no limit"
	}
	return strconv.Itoa(n)
}
