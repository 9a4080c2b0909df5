package keepercmd

import (
	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/devmode"
)

func init() { subcommands = append(subcommands, devCmd) }

// devCmd is `keeper dev`: the one-command way to try Soul Stack.
func devCmd() *cobra.Command {
	var o devmode.Options
	c := &cobra.Command{
		Use:   "dev [--data-dir ./.soulstack-dev] [--souls 3] [--listen 127.0.0.1:8080]",
		Short: "Run a Keeper with local souls and the example service, for trying Soul Stack on one machine",
		Long: `Runs, in one process, a Keeper on SQLite in --data-dir (initialized the first
time: the first Archon's token is printed, saved in the data dir and written
to the soulctl config, so soulctl just works), --souls local soul processes
(the soul binary next to keeper or on PATH), each confined to its own root
directory under the data dir and carrying covens (all dev; the last db, the
others web), and the bundled hello example service registered from a git
repository it commits under the data dir.

It prints the API and UI URLs, the token and the next commands to type.
Ctrl-C stops the souls, then the keeper. Starting it again reuses the data
dir: same keeper, same souls, same incarnations. Keeper logs go to
<data-dir>/keeper.log, each soul's to <data-dir>/souls/N/soul.log.`,
		Example: `  keeper dev
  keeper dev --souls 5 --listen 127.0.0.1:9090 --data-dir /tmp/ss-dev`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			o.NoSouls = o.Souls == 0
			if err := devmode.Run(cmd.Context(), o); err != nil {
				return cmdutil.Failed(err)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.DataDir, "data-dir", devmode.DefaultDataDir, "where the keeper's database, the souls and the example repository live")
	fl.StringVar(&o.Listen, "listen", devmode.DefaultListen, "address of the keeper (API, UI and the soul stream); port 0 picks a free one")
	fl.IntVar(&o.Souls, "souls", devmode.DefaultSouls, "number of local souls")
	fl.StringVar(&o.SoulBin, "soul-bin", "", "the soul executable (default: next to keeper, else on PATH)")
	fl.StringVar(&o.SoulctlConfig, "soulctl-config", "", `where to write the soulctl config (default soulctl's: $SOULCTL_CONFIG or $XDG_CONFIG_HOME/soulctl/config.yaml); "-" to leave it alone`)
	fl.BoolVar(&o.NoExample, "no-example", false, "do not register the hello example service")
	fl.StringVar(&o.LogLevel, "log-level", "info", "keeper log level: debug, info, warn or error")
	fl.StringVar(&o.Config, "config", "", "keeper configuration file (as keeper serve's, e.g. checker.bindings); dev mode still decides the data dir, listen address, database (SQLite) and log level")
	return c
}
