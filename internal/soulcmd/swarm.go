package soulcmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/soul"
)

func init() { subcommands = append(subcommands, newSwarmCmd) }

// newSwarmCmd is `soul swarm`: many virtual souls in one process.
func newSwarmCmd() *cobra.Command {
	var (
		cf     connFlags
		count  int
		prefix string
		ramp   time.Duration
		srcNet string
		slots  int
	)
	c := &cobra.Command{
		Use:   "swarm",
		Short: "Run N virtual souls in one process (scale tests)",
		Long: "Runs --count souls, SIDs <prefix>-0001 …, each with its own key and data directory\n" +
			"under --data-dir and real module code; file modules are confined to <data-dir>/<sid>/root\n" +
			"and modules that change host-global state refuse to run. Facts are collected once and\n" +
			"shared, with each soul's own SID.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if count < 1 {
				return cmdutil.Usage(errors.New("--count must be at least 1"))
			}
			log, err := cf.logger(c.ErrOrStderr())
			if err != nil {
				return err
			}
			if prefix == "" {
				host, err := os.Hostname()
				if err != nil {
					return cmdutil.Failed(fmt.Errorf("reading hostname for the SID prefix: %w", err))
				}
				prefix, _, _ = strings.Cut(host, ".")
			}
			base, err := soul.CollectFacts(soul.FactsOptions{})
			if err != nil {
				return cmdutil.Failed(fmt.Errorf("collecting facts: %w", err))
			}
			width := max(4, len(fmt.Sprint(count)))
			shared, err := cf.config(log)
			if err != nil {
				return err
			}
			sources, err := swarmSources(srcNet, count)
			if err != nil {
				return cmdutil.Usage(err)
			}
			var handshakes chan struct{}
			if slots > 0 {
				handshakes = make(chan struct{}, slots)
			}
			agents := make([]*soul.Agent, count)
			for i := range agents {
				sid := fmt.Sprintf("%s-%0*d", prefix, width, i+1)
				dir := filepath.Join(cf.dataDir, sid)
				root := filepath.Join(dir, "root")
				if err := os.MkdirAll(root, 0o700); err != nil {
					return cmdutil.Failed(fmt.Errorf("creating %s: %w", root, err))
				}
				cfg := shared
				cfg.SID, cfg.DataDir, cfg.Root = sid, dir, root
				cfg.Logger = log
				cfg.Handshakes = handshakes
				if sources != nil {
					cfg.LocalAddr = sources[i]
				}
				cfg.Facts = func() (map[string]any, error) {
					f := maps.Clone(base)
					f["sid"] = sid
					return f, nil
				}
				if agents[i], err = soul.NewAgent(cfg); err != nil {
					return cmdutil.Usage(err)
				}
			}
			log.Info("swarm starting", "count", count, "keepers", shared.KeeperURLs, "data_dir", cf.dataDir)
			return runSwarm(c.Context(), agents, ramp)
		},
	}
	cf.register(c, "soul-swarm")
	c.Flags().IntVar(&count, "count", 10, "number of souls")
	c.Flags().StringVar(&prefix, "sid-prefix", "", "SID prefix (default: the short host name)")
	c.Flags().DurationVar(&ramp, "ramp", 0, "spread the souls' first connections over this long")
	c.Flags().StringVar(&srcNet, "source-net", "", "give each soul its own source address from this prefix, e.g. 127.1.0.0/16 (as hosts of a fleet have; the keeper limits failed hellos per source address)")
	c.Flags().IntVar(&slots, "max-handshakes", 0, "at most this many souls say hello at once (0: no bound); the others wait their turn")
	if f := c.Flags().Lookup("log-level"); f != nil {
		f.DefValue = "warn"
		_ = f.Value.Set("warn")
	}
	return c
}

// runSwarm runs every agent until ctx ends and reports the souls the
// keeper refused.
func runSwarm(ctx context.Context, agents []*soul.Agent, ramp time.Duration) error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		refused []error
	)
	step := ramp / time.Duration(len(agents))
	for i, a := range agents {
		if step > 0 && i > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(step):
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(ctx); err != nil {
				mu.Lock()
				refused = append(refused, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(refused) > 0 {
		return cmdutil.Failed(fmt.Errorf("%d of %d souls stopped: %w", len(refused), len(agents), errors.Join(refused...)))
	}
	return nil
}

// swarmSources returns count distinct source addresses from the prefix
// cidr, skipping its first (network) address; nil when cidr is empty.
func swarmSources(cidr string, count int) ([]netip.Addr, error) {
	if cidr == "" {
		return nil, nil
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("--source-net: %w", err)
	}
	p = p.Masked()
	out := make([]netip.Addr, 0, count)
	for a := p.Addr().Next(); a.IsValid() && p.Contains(a) && len(out) < count; a = a.Next() {
		out = append(out, a)
	}
	if len(out) < count {
		return nil, fmt.Errorf("--source-net %s holds %d addresses, fewer than --count %d", cidr, len(out), count)
	}
	return out, nil
}
