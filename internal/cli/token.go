package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newTokenCmd) }

// newTokenCmd is `soulctl token`: Archon JWTs.
func newTokenCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "token",
		Aliases: []string{"tokens"},
		Short:   "Issue, list and revoke Archon tokens (JWTs)",
	}
	c.AddCommand(newTokenCreateCmd(g), newTokenListCmd(g), newTokenRevokeCmd(g))
	return c
}

func newTokenListCmd(g *Globals) *cobra.Command {
	var archon string
	c := &cobra.Command{
		Use:     "list [--archon ID|NAME]",
		Aliases: []string{"ls"},
		Short:   "List token records: yours, or (admin) every Archon's",
		Long: `Lists issued tokens (never the tokens themselves): an admin sees every
Archon's, narrowed with --archon; anyone else sees its own. Tokens minted
with a leaked token show up here: revoke them with soulctl token revoke ID.`,
		Example: `  soulctl token list
  soulctl token list --archon alice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if archon != "" {
				archon = archonID(cmd.Context(), cl, archon)
			}
			ts, err := cl.ListTokens(cmd.Context(), archon)
			if err != nil {
				return err
			}
			if ts == nil {
				ts = []apitypes.Token{}
			}
			return g.Emit(cmd, ts, func(w io.Writer) error {
				row(w, "ID", "ARCHON", "DESCRIPTION", "STATUS", "EXPIRES", "CREATED")
				for _, t := range ts {
					row(w, t.ID, t.ArchonID, dash(t.Description), tokenStatus(t, now()), ago(t.ExpiresAt), ago(t.CreatedAt))
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&archon, "archon", "", "only this Archon's tokens, by id or name (another Archon's: admin)")
	return c
}

// tokenStatus is whether a token record still authenticates at now (its
// Archon being enabled).
func tokenStatus(t apitypes.Token, now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case !now.Before(t.ExpiresAt):
		return "expired"
	default:
		return "active"
	}
}

func newTokenCreateCmd(g *Globals) *cobra.Command {
	var (
		req   apitypes.CreateTokenRequest
		ttl   string
		quiet bool
	)
	c := &cobra.Command{
		Use:   "create [--ttl 30d] [--archon ID] [--description TEXT]",
		Short: "Issue a token for yourself, or (admin) for another Archon",
		Long: `Issues a new token. The token is shown once: keep it (for example with
soulctl login --token …). -q prints the token alone, for scripts.
A token mints only tokens of its role or lower that expire no later than
itself (--ttl longer than that is refused; the default is capped at it), and
revoking it revokes every token it minted.`,
		Example: `  soulctl token create --ttl 24h --description ci
  TOKEN=$(soulctl token create -q --ttl 1h)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.capture {
				// A procedure's results land in its task's step log, which
				// every viewer reads, and the token would be the Checker's.
				return cmdutil.Usage(errors.New("token create is not available in procedures: the token would be kept in the task's step log"))
			}
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
			tok, err := cl.CreateToken(cmd.Context(), req)
			if err != nil {
				return err
			}
			if quiet && !g.capture {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), tok.Token)
				return err
			}
			return g.Emit(cmd, tok, func(w io.Writer) error { return tokenDetail(w, tok) })
		},
	}
	c.Flags().StringVar(&ttl, "ttl", "", "lifetime: 90m, 24h, 30d (default: the Keeper's, 30d, at most what your token has left)")
	c.Flags().StringVar(&req.ArchonID, "archon", "", "issue for this Archon id (admin; default yourself)")
	c.Flags().StringVar(&req.Description, "description", "", "what the token is for")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the token")
	return c
}

func newTokenRevokeCmd(g *Globals) *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:   "revoke [token-id]",
		Short: "Revoke a token by id (yours, or any as admin)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tid, cl, err := g.nameAndClient(cmd, args, id, "id")
			if err != nil {
				return err
			}
			if err := cl.RevokeToken(cmd.Context(), tid); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]any{"id": tid, "revoked": true}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "token %s revoked\n", tid)
				return err
			})
		},
	}
	addNameFlag(c, &id, "id", "token id")
	return c
}

// tokenDetail is the table form of an issued token.
func tokenDetail(w io.Writer, t apitypes.IssuedToken) error {
	row(w, "ID:", t.ID)
	row(w, "Expires:", expires(t.ExpiresAt))
	row(w, "Token:", t.Token)
	fmt.Fprintln(w, "(the token is shown once: keep it now)")
	return nil
}

// expires renders an expiry time: local time and how far away.
func expires(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Local().Format("2006-01-02 15:04:05") + " (" + ago(t) + ")"
}
