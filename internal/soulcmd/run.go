package soulcmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	_ "github.com/soulstack/soulstack/internal/module/core" // the modules a soul runs
	"github.com/soulstack/soulstack/internal/soul"
)

func init() { subcommands = append(subcommands, newRunCmd) }

// joinTokenEnv lets the join token stay off the command line (and ps).
const joinTokenEnv = "SOUL_JOIN_TOKEN"

// connFlags are the keeper-connection flags run and swarm share.
type connFlags struct {
	keeper      string
	joinToken   string
	dataDir     string
	caFile      string
	fingerprint string
	logLevel    string
	logFormat   string
	minBackoff  time.Duration
	maxBackoff  time.Duration
}

func (f *connFlags) register(c *cobra.Command, defaultDataDir string) {
	fl := c.Flags()
	fl.StringVar(&f.keeper, "keeper", "", "keeper URL, e.g. https://keeper.example:8080 (required)")
	fl.StringVar(&f.joinToken, "join-token", "", "join token from the keeper (or $"+joinTokenEnv+"); carries the keeper's fingerprint")
	fl.StringVar(&f.dataDir, "data-dir", defaultDataDir, "directory for the soul key, the pinned keeper fingerprint and undelivered results")
	fl.StringVar(&f.caFile, "ca-file", "", "trust the keeper CA in this PEM file instead of a fingerprint")
	fl.StringVar(&f.fingerprint, "fingerprint", "", "pin the keeper CA by its SHA-256 fingerprint (64 hex digits)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.DurationVar(&f.minBackoff, "reconnect-min", soul.DefaultMinBackoff, "first reconnect delay (doubles up to --reconnect-max, with jitter)")
	fl.DurationVar(&f.maxBackoff, "reconnect-max", soul.DefaultMaxBackoff, "longest reconnect delay, also the retry period while pending")
	_ = c.MarkFlagRequired("keeper")
	c.MarkFlagsMutuallyExclusive("ca-file", "fingerprint")
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

func (f *connFlags) config() soul.Config {
	if f.joinToken == "" {
		f.joinToken = os.Getenv(joinTokenEnv)
	}
	return soul.Config{
		KeeperURL:   strings.TrimRight(f.keeper, "/"),
		DataDir:     f.dataDir,
		JoinToken:   f.joinToken,
		Fingerprint: f.fingerprint,
		CAFile:      f.caFile,
		MinBackoff:  f.minBackoff,
		MaxBackoff:  f.maxBackoff,
	}
}

// newRunCmd is `soul run`: the agent's normal mode.
func newRunCmd() *cobra.Command {
	var (
		cf       connFlags
		sid      string
		root     string
		interval time.Duration
	)
	c := &cobra.Command{
		Use:   "run",
		Short: "Connect to the Keeper and run the work it sends until stopped",
		Long: "Connects out to the Keeper over HTTP/2 + TLS (the Keeper's CA pinned by the join token's\n" +
			"fingerprint, --fingerprint or --ca-file), onboards with the join token or waits as pending\n" +
			"until an Archon accepts it, reports the soulprint and runs the work it receives.\n" +
			"After the first join the fingerprint is kept in --data-dir, so restarts need no token.",
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
			cfg := cf.config()
			cfg.SID, cfg.Root, cfg.Logger, cfg.FactsInterval = sid, root, log, interval
			a, err := soul.NewAgent(cfg)
			if err != nil {
				return cmdutil.Usage(err)
			}
			log.Info("soul starting", "sid", sid, "keeper", cfg.KeeperURL, "data_dir", cfg.DataDir, "root", root)
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
	return c
}
