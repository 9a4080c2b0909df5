package keepercmd

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cloud"
	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { subcommands = append(subcommands, newCloudLocalCmd) }

// newCloudLocalCmd is `keeper cloud-local`: the local cloud kind as an
// exec provider (one request on stdin, the instances on stdout).
func newCloudLocalCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "cloud-local --dir DIR",
		Short: "Serve one exec-provider request with local systemd hosts (needs root)",
		Long: `An exec cloud provider of Soul Stack's own: it reads one request of the exec
protocol on stdin (op create, list or delete) and answers like the local
kind does — one systemd host per instance on this machine, booted from the
profile's spec.rootfs, the bootstrap's install.sh run inside it — printing
[{name, id, address}] on stdout. Register it as an exec provider:

  soulctl cloud provider set labx --kind exec --executable /usr/bin/keeper --arg cloud-local --arg --dir=/var/lib/soulstack/cloud-labx`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return cmdutil.Usage(errors.New("--dir is required: the directory of the hosts' state"))
			}
			hosts := &cloud.LocalHosts{Dir: dir}
			return cloud.ServeExec(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), func(req cloud.Request) (cloud.Driver, error) {
				return hosts.Driver(store.CloudProvider{Name: req.Provider, Kind: cloud.KindLocal, Config: map[string]any{"dir": dir}})
			})
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "directory of the hosts' state (absolute)")
	return c
}
