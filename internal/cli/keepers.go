package cli

import (
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newKeepersCmd) }

// newKeepersCmd is `soulctl keepers`: the keepers sharing the database.
func newKeepersCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "keepers",
		Short: "The keepers sharing the database: which one leads, their heartbeats, the souls each holds",
	}
	c.AddCommand(&cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the keepers, by id (LEADER marks the one that leads, * the one answering)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			ks, err := cl.ListKeepers(cmd.Context())
			if err != nil {
				return err
			}
			return g.Emit(cmd, ks, func(w io.Writer) error {
				row(w, "KEEPER", "ROLE", "SOULS", "ADDRESS", "VERSION", "STARTED", "HEARTBEAT")
				for _, k := range ks {
					id, role := k.ID, "follower"
					if k.Self {
						id += " *"
					}
					if k.Leader {
						role = "LEADER"
					}
					row(w, id, role, strconv.Itoa(k.Souls), dash(k.Address), dash(k.Version), k.StartedAt.Local().Format("2006-01-02 15:04:05"),
						time.Since(k.HeartbeatAt).Round(100*time.Millisecond).String()+" ago")
				}
				return nil
			})
		},
	})
	c.AddCommand(newKeepersDrainCmd(g))
	return c
}
