package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/version"
)

func init() { subcommands = append(subcommands, newVersionCmd) }

// versions is what `soulctl version -o json` prints.
type versions struct {
	Client version.Info            `json:"client"`
	Keeper *apitypes.KeeperVersion `json:"keeper,omitempty"`
}

// newVersionCmd is `soulctl version`: this client's build and, when a
// Keeper is configured, the Keeper's (GET /v1/version needs no token).
func newVersionCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Show soulctl's version and the Keeper's",
		Long: `Prints soulctl's version and, when a Keeper is configured (--keeper,
$SOULCTL_KEEPER or the config file), the Keeper's version and the pin of its
TLS public key (for curl --pinnedpubkey when fetching /install.sh). Without a
Keeper only the client's is shown; an unreachable Keeper is an error (exit 1)
after the client's version.`,
		Example: `  soulctl version
  soulctl version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versions{Client: version.Get()}
			s, err := g.Settings()
			if err != nil {
				return err
			}
			var kerr error
			if s.Keeper != "" || g.client != nil {
				cl := g.client
				if cl == nil {
					if cl, err = newClient(s); err != nil {
						return err
					}
				}
				kv, err := cl.Version(cmd.Context())
				if err != nil {
					kerr = fmt.Errorf("asking the keeper %s its version: %w", s.Keeper, err)
				} else {
					v.Keeper = &kv
				}
			}
			if err := g.Emit(cmd, v, func(w io.Writer) error {
				fmt.Fprintf(w, "soulctl %s\n", v.Client)
				if v.Keeper != nil {
					fmt.Fprintf(w, "keeper  %s (commit %.12s, %s, %s)\n", v.Keeper.Version, v.Keeper.Commit, v.Keeper.GoVersion, v.Keeper.Platform)
					if v.Keeper.TLSPin != "" {
						fmt.Fprintf(w, "keeper TLS pin: %s\n", v.Keeper.TLSPin)
					}
				}
				return nil
			}); err != nil {
				return err
			}
			return kerr
		},
	}
}
