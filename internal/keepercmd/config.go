package keepercmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/config"
)

func init() { subcommands = append(subcommands, newConfigCmd) }

// newConfigCmd is `keeper config`: checks of the configuration file.
func newConfigCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Check the Keeper's configuration file",
	}
	var cfgFile string
	v := &cobra.Command{
		Use:   "validate",
		Short: "Validate a configuration file as keeper serve would, without starting anything",
		Long: `Reads the configuration file (--config, default /etc/soulstack/keeper.yaml)
the way keeper serve does — unknown keys, wrong types and bad values are
errors naming the key and line — then applies SOULSTACK_DATABASE_URL from the
environment and checks every value. Exit 0 and "ok" when keeper serve would
accept it; exit 2 with every problem otherwise. Nothing is opened or started.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgFile)
			if err != nil {
				return cmdutil.Usage(err)
			}
			if err := cfg.Validate(); err != nil {
				return cmdutil.Usage(fmt.Errorf("config %s: %w", cfgFile, err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", cfgFile)
			return nil
		},
	}
	v.Flags().StringVar(&cfgFile, "config", "/etc/soulstack/keeper.yaml", "YAML configuration file")
	c.AddCommand(v)
	return c
}
