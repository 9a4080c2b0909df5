package keepercmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
)

func init() { subcommands = append(subcommands, drainCmd) }

// drainCmd is `keeper drain`: empty one keeper of a fleet before
// maintenance.
func drainCmd() *cobra.Command {
	var (
		cfgFile string
		wait    time.Duration
	)
	c := &cobra.Command{
		Use:   "drain [--config FILE] [--keeper-id ID] [--wait 5m]",
		Short: "Empty a keeper of a fleet before maintenance: its souls move to the other keepers",
		Long: `Asks a keeper sharing a PostgreSQL database with others to refuse new souls and
to ask every soul it holds to move to another of its keepers (souls given several
keeper addresses). A soul leaves once the work that keeper gave it has finished,
so no run fails. Run it next to the keeper with its configuration (the keeper is
the one --config/--data-dir describe, or --keeper-id), then stop the keeper once
it holds no soul: --wait waits for that and fails if souls remain. The keeper
stays drained until it restarts. The same from anywhere: soulctl keepers drain ID.`,
		Args: cobra.NoArgs,
	}
	fl := config.BindFlags(c.Flags(), "data-dir", "database-url", "keeper-id")
	c.Flags().StringVar(&cfgFile, "config", "", "YAML configuration file (flags override it)")
	c.Flags().DurationVar(&wait, "wait", 5*time.Minute, "wait up to this long until the keeper holds no soul (0: do not wait)")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := config.Load(cfgFile)
		if err != nil {
			return cmdutil.Usage(err)
		}
		fl.Apply(&cfg)
		if !cfg.Postgres() {
			return cmdutil.Usage(fmt.Errorf("this keeper's store is SQLite: it is the only keeper, its souls have nowhere to go (drain needs several keepers on one PostgreSQL database)"))
		}
		out := cmd.ErrOrStderr()
		id, left, err := keeper.Drain(cmd.Context(), keeper.DrainOptions{Keeper: cfg, KeeperID: cfg.KeeperID, Wait: wait,
			Progress: func(id string, n int) {
				fmt.Fprintf(out, "%s: keeper %s holds %d souls\n", time.Now().Format("15:04:05"), id, n)
			}})
		if err != nil {
			return cmdutil.Failed(err)
		}
		switch {
		case left < 0:
			fmt.Fprintf(out, "keeper %s is draining: its souls are moving to the other keepers\n", id)
		case left > 0:
			return cmdutil.Failed(fmt.Errorf("keeper %s still holds %d souls after %s", id, left, wait))
		default:
			fmt.Fprintf(out, "keeper %s is drained: no soul is connected to it; stop it now\n", id)
		}
		return nil
	}
	return c
}
