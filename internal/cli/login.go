package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newLoginCmd, newWhoamiCmd) }

// newLoginCmd is `soulctl login`: check a Keeper and token, then remember
// them in the config file.
func newLoginCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "login --keeper URL [--token JWT] [--fingerprint FP | --ca-file PEM]",
		Short: "Check a Keeper and token and save them in the config file",
		Long: `Checks the Keeper URL and the token (GET /v1/whoami) and writes them, with the
TLS trust (--fingerprint or --ca-file), to the config file: --config, else
$SOULCTL_CONFIG, else $XDG_CONFIG_HOME/soulctl/config.yaml (~/.config/soulctl/
config.yaml). Values missing from the flags come from the environment and the
current config; a token still missing is read from standard input.`,
		Example: `  soulctl login --keeper https://keeper.example:8080 --fingerprint 3f2a… --token "$TOKEN"
  echo "$TOKEN" | soulctl login --keeper http://127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.capture {
				return cmdutil.Usage(errors.New("login is not available in procedures"))
			}
			s, err := g.Settings()
			if err != nil {
				return err
			}
			if s.Token == "" {
				fmt.Fprint(cmd.ErrOrStderr(), "Token: ")
				line, err := bufio.NewReader(g.stdin()).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return cmdutil.Usage(fmt.Errorf("reading the token: %w", err))
				}
				s.Token = strings.TrimSpace(line)
				if s.Token == "" {
					return cmdutil.Usage(errors.New("no token given"))
				}
			}
			cl, err := newClient(s)
			if err != nil {
				return err
			}
			warnPlainHTTP(cmd.ErrOrStderr(), s.Keeper, s.Token)
			who, err := cl.Whoami(cmd.Context())
			if err != nil {
				return err
			}
			path, err := g.configPath()
			if err != nil {
				return err
			}
			if err := SaveSettings(path, s); err != nil {
				return cmdutil.Failed(err)
			}
			v := loginView{Keeper: s.Keeper, ArchonID: who.ArchonID, Name: who.Name, Role: who.Role,
				TokenID: who.TokenID, ExpiresAt: who.ExpiresAt, Config: path}
			return g.Emit(cmd, v, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "logged in to %s as %s (%s), token expires %s\nsaved in %s\n",
					s.Keeper, who.Name, who.Role, expires(who.ExpiresAt), path)
				return err
			})
		},
	}
}

// newWhoamiCmd is `soulctl whoami`: the Archon behind the token.
func newWhoamiCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show the Keeper and the Archon the token belongs to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			who, err := cl.Whoami(cmd.Context())
			if err != nil {
				return err
			}
			return g.Emit(cmd, who, func(w io.Writer) error {
				row(w, "Keeper:", cl.BaseURL())
				row(w, "Archon:", who.Name+" ("+who.ArchonID+")")
				row(w, "Role:", who.Role)
				row(w, "Token:", who.TokenID)
				row(w, "Expires:", expires(who.ExpiresAt))
				return nil
			})
		},
	}
}

// loginView is `soulctl login -o json|yaml`: where the settings were saved
// and who the token belongs to (never the token itself).
type loginView struct {
	Keeper    string    `json:"keeper"`
	ArchonID  string    `json:"archon_id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	TokenID   string    `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at"`
	Config    string    `json:"config"`
}
