package soulcmd

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/soul"
)

func init() { subcommands = append(subcommands, newFactsCmd) }

// newFactsCmd is `soul facts`: print this host's soulprint.
func newFactsCmd() *cobra.Command {
	var output, sid, root string
	c := &cobra.Command{
		Use:   "facts",
		Short: "Print this host's soulprint (the facts the soul reports to the Keeper)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if output != "json" && output != "yaml" {
				return cmdutil.Usage(fmt.Errorf("--output must be json or yaml, not %q", output))
			}
			facts, err := soul.CollectFacts(soul.FactsOptions{SID: sid, Root: root})
			if err != nil {
				return cmdutil.Failed(fmt.Errorf("collecting facts: %w", err))
			}
			w := c.OutOrStdout()
			if output == "yaml" {
				enc := yaml.NewEncoder(w)
				enc.SetIndent(2)
				if err := enc.Encode(facts); err != nil {
					return fmt.Errorf("writing facts: %w", err)
				}
				return enc.Close()
			}
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(facts)
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "json", "output format: json or yaml")
	c.Flags().StringVar(&sid, "sid", "", "soul identity to report (default: the host's FQDN)")
	c.Flags().StringVar(&root, "root", "", "confinement root; its etc/os-release is reported when present")
	return c
}
