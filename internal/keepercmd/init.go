package keepercmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
)

func init() { subcommands = append(subcommands, initCmd) }

// initCmd is `keeper init`: it prints the first Archon's token alone on
// stdout (so `TOKEN=$(keeper init …)` works) and everything else on stderr.
func initCmd() *cobra.Command {
	var (
		archon  string
		ttl     time.Duration
		cfgFile string
	)
	c := &cobra.Command{
		Use:   "init --data-dir DIR",
		Short: "Initialize a keeper: database, TLS material, signing key and the first Archon; print its token",
		Long: `Initialize a keeper: create the database (SQLite in the data directory, or
PostgreSQL with --database-url), the TLS material (a self-signed CA and server
certificate, unless --tls-cert and --tls-key are given), the token signing key
file (--signing-key-file, default <data-dir>/signing.key, mode 0600; keepers
sharing a database share a copy of it) and the first Archon, an admin. Its token is printed alone on stdout, once.
Initializing an initialized keeper is refused.`,
		Args: cobra.NoArgs,
	}
	fl := config.BindFlags(c.Flags(), "data-dir", "database-url", "tls-hosts", "tls-cert", "tls-key", "keeper-id", "signing-key-file")
	c.Flags().StringVar(&cfgFile, "config", "", "YAML configuration file")
	c.Flags().StringVar(&archon, "archon-name", "admin", "name of the first Archon")
	c.Flags().DurationVar(&ttl, "token-ttl", keeper.DefaultFirstTokenTTL, "lifetime of the first Archon's token")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := config.Load(cfgFile)
		if err != nil {
			return cmdutil.Usage(err)
		}
		fl.Apply(&cfg)
		if cfg.DataDir == "" {
			return cmdutil.Usage(fmt.Errorf("--data-dir is required"))
		}
		res, err := keeper.Init(cmd.Context(), keeper.InitOptions{Keeper: cfg, ArchonName: archon, TokenTTL: ttl})
		if err != nil {
			if domain.ErrorCode(err) == domain.CodeInvalid {
				return cmdutil.Usage(err)
			}
			return cmdutil.Failed(err)
		}
		stderr := cmd.ErrOrStderr()
		fmt.Fprintf(stderr, "Initialized keeper %s in %s.\n", res.KeeperID, cfg.DataDir)
		fmt.Fprintf(stderr, "Archon %q (admin, id %s); its token, valid until %s, is on stdout and is shown only once.\n",
			res.Archon.Name, res.Archon.ID, res.Token.ExpiresAt.Format(time.RFC3339))
		fmt.Fprintf(stderr, "Keeper CA fingerprint (souls pin it; join tokens carry it): %s\n", res.Fingerprint)
		fmt.Fprintf(stderr, "Start it with %s.\n", keeper.ServeHint(cfg))
		fmt.Fprintln(cmd.OutOrStdout(), res.Token.Token)
		return nil
	}
	return c
}
