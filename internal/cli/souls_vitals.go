package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// newSoulsVitalsCmd is `soulctl souls vitals`: a soul's vital signs (SPEC
// §14.1), volatile facts reported every minute.
func newSoulsVitalsCmd(g *Globals) *cobra.Command {
	var sid string
	c := &cobra.Command{
		Use:   "vitals [sid]",
		Short: "Show a soul's vital signs: load, memory and disk use, uptime, failed units",
		Example: `  soulctl souls vitals web-1
  soulctl souls vitals web-1 -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, cl, err := g.nameAndClient(cmd, args, sid, "sid")
			if err != nil {
				return err
			}
			v, err := cl.SoulVitals(cmd.Context(), id)
			if err != nil {
				return err
			}
			return g.Emit(cmd, v, func(w io.Writer) error {
				if v.At == nil {
					_, err := fmt.Fprintf(w, "%s has not reported vital signs yet\n", v.SID)
					return err
				}
				row(w, "VITAL", "VALUE")
				for _, k := range sortedKeys(v.Vitals) {
					row(w, k, compactJSON(v.Vitals[k]))
				}
				row(w, "reported", ago(*v.At))
				return nil
			})
		},
	}
	addNameFlag(c, &sid, "sid", "soul SID")
	return c
}
