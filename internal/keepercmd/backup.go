package keepercmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

func init() { subcommands = append(subcommands, backupCmd) }

// backupCmd is `keeper backup`: an online, consistent copy of the SQLite
// store (VACUUM INTO), taken while the keeper serves. PostgreSQL stores
// are backed up with pg_dump.
func backupCmd() *cobra.Command {
	var cfgFile, out string
	c := &cobra.Command{
		Use:   "backup --data-dir DIR --out FILE",
		Short: "Write an online, consistent copy of the SQLite store into FILE",
		Long: `Write a consistent copy of the keeper's SQLite database (data_dir/keeper.db)
into FILE (which must not exist; it is created with mode 0600), while the keeper
serves. To restore: stop the keeper, put FILE in place of keeper.db (removing
any keeper.db-wal and keeper.db-shm), start it. A keeper on PostgreSQL is backed
up with pg_dump instead (docs/operations.md, "Backup and restore").`,
		Args: cobra.NoArgs,
	}
	fl := config.BindFlags(c.Flags(), "data-dir", "database-url")
	c.Flags().StringVar(&cfgFile, "config", "", "YAML configuration file (flags override it)")
	c.Flags().StringVar(&out, "out", "", "the file to write the copy into (required; must not exist)")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := config.Load(cfgFile)
		if err != nil {
			return cmdutil.Usage(err)
		}
		fl.Apply(&cfg)
		switch {
		case out == "":
			return cmdutil.Usage(fmt.Errorf("--out is required"))
		case cfg.Postgres():
			return cmdutil.Usage(fmt.Errorf("this keeper's store is PostgreSQL: back it up with `pg_dump --format=custom` (docs/operations.md, \"Backup and restore\")"))
		case cfg.DataDir == "":
			return cmdutil.Usage(fmt.Errorf("--data-dir is required"))
		}
		if err := sqlite.Backup(cmd.Context(), cfg.SQLitePath(), out); err != nil {
			return cmdutil.Failed(err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "backed up %s into %s\n", cfg.SQLitePath(), out)
		return nil
	}
	return c
}
