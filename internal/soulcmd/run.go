package soulcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/health"
	_ "github.com/soulstack/soulstack/internal/module/core" // the modules a soul runs
	"github.com/soulstack/soulstack/internal/soul"
	"github.com/soulstack/soulstack/internal/tracing"
	"github.com/soulstack/soulstack/internal/version"
)

func init() { subcommands = append(subcommands, newRunCmd) }

// joinTokenEnv lets the join token stay off the command line (and ps).
const joinTokenEnv = "SOUL_JOIN_TOKEN"

// connFlags are the keeper-connection flags run and swarm share.
type connFlags struct {
	keepers       []string
	joinToken     string
	joinTokenFile string
	dataDir       string
	caFile        string
	fingerprint   string
	logLevel      string
	logFormat     string
	minBackoff    time.Duration
	maxBackoff    time.Duration
	pending       time.Duration
	spread        time.Duration
}

func (f *connFlags) register(c *cobra.Command, defaultDataDir string) {
	fl := c.Flags()
	fl.StringArrayVar(&f.keepers, "keeper", nil, "keeper URL, e.g. https://keeper.example:8080 (required). Repeat it, or give a comma or space separated list, for the keepers of a fleet (one database, one CA); a host name stands for every address it resolves to. The soul connects to one at random and moves to another when its keeper goes away")
	fl.StringVar(&f.joinToken, "join-token", "", "join token from the keeper; carries the keeper's fingerprint. Prefer $"+joinTokenEnv+" or --join-token-file: a command-line argument is visible to every local user (ps)")
	fl.StringVar(&f.joinTokenFile, "join-token-file", "", "read the join token from this file (mode 0600), keeping it out of the process list")
	fl.StringVar(&f.dataDir, "data-dir", defaultDataDir, "directory for the soul key, the pinned keeper fingerprint and undelivered results")
	fl.StringVar(&f.caFile, "ca-file", "", "trust the keeper CA in this PEM file instead of a fingerprint")
	fl.StringVar(&f.fingerprint, "fingerprint", "", "pin the keeper CA by its SHA-256 fingerprint (64 hex digits)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.DurationVar(&f.minBackoff, "reconnect-min", soul.DefaultMinBackoff, "first reconnect delay (doubles up to --reconnect-max, with jitter)")
	fl.DurationVar(&f.maxBackoff, "reconnect-max", soul.DefaultMaxBackoff, "longest reconnect delay")
	fl.DurationVar(&f.spread, "failover-spread", soul.DefaultFailoverSpread, "a soul whose keeper went away says hello to another after a random delay up to this (at most --reconnect-max), so the souls of a dead keeper do not reach the survivors all at once")
	fl.DurationVar(&f.pending, "pending-interval", soul.DefaultPendingInterval, "how often a soul pending acceptance says hello again (fixed: an accepted soul connects within it)")
	_ = c.MarkFlagRequired("keeper")
	c.MarkFlagsMutuallyExclusive("ca-file", "fingerprint")
	c.MarkFlagsMutuallyExclusive("join-token", "join-token-file")
}

func (f *connFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, cmdutil.Usage(fmt.Errorf("--log-level: %w", err))
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, cmdutil.Usage(fmt.Errorf("--log-format must be text or json, not %q", f.logFormat))
	}
}

// config builds the agent's configuration. The join token comes from
// --join-token-file, $SOUL_JOIN_TOKEN or --join-token; the last one is
// readable by every local user through the process list (audit note I9),
// so it is accepted with a warning.
func (f *connFlags) config(log *slog.Logger) (soul.Config, error) {
	switch {
	case f.joinTokenFile != "":
		b, err := os.ReadFile(f.joinTokenFile)
		if err != nil {
			return soul.Config{}, cmdutil.Usage(fmt.Errorf("--join-token-file: %w", err))
		}
		if st, err := os.Stat(f.joinTokenFile); err == nil && st.Mode().Perm()&0o077 != 0 {
			log.Warn("the join token file is readable by other users; make it 0600", "file", f.joinTokenFile, "mode", fmt.Sprintf("%04o", st.Mode().Perm()))
		}
		f.joinToken = strings.TrimSpace(string(b))
		if f.joinToken == "" {
			return soul.Config{}, cmdutil.Usage(fmt.Errorf("--join-token-file %s is empty", f.joinTokenFile))
		}
	case f.joinToken != "":
		log.Warn("the join token given with --join-token is visible to every local user in the process list; pass it in $" + joinTokenEnv + " or with --join-token-file")
	default:
		f.joinToken = os.Getenv(joinTokenEnv)
	}
	return soul.Config{
		KeeperURLs:      soul.SplitKeeperURLs(f.keepers...),
		FailoverSpread:  f.spread,
		DataDir:         f.dataDir,
		JoinToken:       f.joinToken,
		Fingerprint:     f.fingerprint,
		CAFile:          f.caFile,
		MinBackoff:      f.minBackoff,
		MaxBackoff:      f.maxBackoff,
		PendingInterval: f.pending,
	}, nil
}

// newRunCmd is `soul run`: the agent's normal mode.
func newRunCmd() *cobra.Command {
	var (
		cf                            connFlags
		sid                           string
		root                          string
		interval                      time.Duration
		healthSummary, vitalsInterval time.Duration
	)
	c := &cobra.Command{
		Use:   "run",
		Short: "Connect to the Keeper and run the work it sends until stopped",
		Long: "Connects out to the Keeper over HTTP/2 + TLS (the Keeper's CA pinned by the join token's\n" +
			"fingerprint, --fingerprint or --ca-file), onboards with the join token or waits as pending\n" +
			"until an Archon accepts it, reports the soulprint and runs the work it receives.\n" +
			"After the first join the fingerprint is kept in --data-dir, so restarts need no token.\n" +
			"With several keepers (--keeper repeated, a list, or a name with several addresses) the\n" +
			"soul pins the same CA on all of them, connects to one at random, moves to another within\n" +
			"seconds when its keeper dies, waits out a busy keeper's retry-after, and moves when a\n" +
			"keeper being drained asks it to (its running work finishes first).",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			log, err := cf.logger(c.ErrOrStderr())
			if err != nil {
				return err
			}
			if sid == "" {
				facts, err := soul.CollectFacts(soul.FactsOptions{Root: root})
				if err != nil {
					return cmdutil.Failed(fmt.Errorf("finding the default SID: %w", err))
				}
				sid, _ = facts["sid"].(string)
			}
			cfg, err := cf.config(log)
			if err != nil {
				return err
			}
			cfg.SID, cfg.Root, cfg.Logger, cfg.FactsInterval = sid, root, log, interval
			cfg.HealthSummaryInterval, cfg.VitalsInterval = healthSummary, vitalsInterval
			tp, stopTraces, err := tracing.Setup(c.Context(), "soulstack-soul", version.Get().Version, os.Getenv)
			if err != nil {
				return cmdutil.Usage(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), 5*time.Second)
				defer cancel()
				if err := stopTraces(ctx); err != nil {
					log.Warn("flushing traces", "err", err)
				}
			}()
			cfg.TracerProvider = tp
			a, err := soul.NewAgent(cfg)
			if err != nil {
				return cmdutil.Usage(err)
			}
			log.Info("soul starting", "sid", sid, "keepers", cfg.KeeperURLs, "data_dir", cfg.DataDir, "root", root)
			if err := a.Run(c.Context()); err != nil {
				if errors.Is(err, soul.ErrRefused) {
					return cmdutil.Failed(err)
				}
				return cmdutil.Failed(fmt.Errorf("soul %s: %w", sid, err))
			}
			return nil
		},
	}
	cf.register(c, "/var/lib/soulstack/soul")
	c.Flags().StringVar(&sid, "sid", "", "soul identity (default: the host's FQDN)")
	c.Flags().StringVar(&root, "root", "", "confine file modules to this directory; modules that change host-global state refuse to run")
	c.Flags().DurationVar(&interval, "facts-interval", soul.DefaultFactsInterval, "how often facts are recollected; a change is sent to the keeper")
	c.Flags().DurationVar(&healthSummary, "health-summary-interval", health.DefaultSummaryInterval, "how often the outcomes of every health check are sent to the keeper (changes go at once)")
	c.Flags().DurationVar(&vitalsInterval, "vitals-interval", soul.DefaultVitalsInterval, "how often vital signs (load, memory, disk, uptime, failed units) are sent to the keeper")
	return c
}
