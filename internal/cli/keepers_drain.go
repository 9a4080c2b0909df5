package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
)

// newKeepersDrainCmd is `soulctl keepers drain ID`.
func newKeepersDrainCmd(g *Globals) *cobra.Command {
	var wait time.Duration
	c := &cobra.Command{
		Use:   "drain KEEPER_ID",
		Short: "Empty one keeper of a fleet before maintenance: its souls move to the other keepers",
		Long: "Asks keeper KEEPER_ID (see soulctl keepers list) to refuse new souls and to ask every soul it\n" +
			"holds to move to another of its keepers. A soul moves once the work that keeper gave it has\n" +
			"finished, so no run fails. The keeper takes the request within a second and stays drained\n" +
			"until it restarts. With --wait, waits until no soul is connected to it any more.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			d, err := cl.DrainKeeper(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			left := -1
			if wait > 0 {
				if left, err = waitDrained(cmd.Context(), cl, args[0], wait, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return g.Emit(cmd, d, func(w io.Writer) error {
				switch {
				case left == 0:
					_, err := fmt.Fprintf(w, "keeper %s is drained: no soul is connected to it\n", d.KeeperID)
					return err
				case left > 0:
					return fmt.Errorf("keeper %s still holds %d souls after %s", d.KeeperID, left, wait)
				}
				_, err := fmt.Fprintf(w, "keeper %s is draining: its souls are moving to the other keepers\n", d.KeeperID)
				return err
			})
		},
	}
	c.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until no soul is connected to the keeper (0: do not wait)")
	return c
}

// waitDrained polls the souls until none is connected to keeper id, or
// wait passed; it returns how many still are.
func waitDrained(ctx context.Context, cl *apiclient.Client, id string, wait time.Duration, progress io.Writer) (int, error) {
	deadline := time.Now().Add(wait)
	last := -1
	for {
		souls, err := cl.ListSouls(ctx, apitypes.SoulQuery{Status: store.SoulConnected})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, s := range souls {
			if s.KeeperID == id {
				n++
			}
		}
		if n != last {
			fmt.Fprintf(progress, "%s: %d souls connected to keeper %s\n", time.Now().Format("15:04:05"), n, id)
			last = n
		}
		if n == 0 || time.Now().After(deadline) {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
