package keepercmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/tracing"
	"github.com/soulstack/soulstack/internal/version"
)

func init() { subcommands = append(subcommands, serveCmd) }

// serveCmd is `keeper serve`: it runs until SIGTERM or SIGINT (the
// context main hands down), then shuts down gracefully.
func serveCmd() *cobra.Command {
	var cfgFile string
	var reinitialize bool
	c := &cobra.Command{
		Use:   "serve --data-dir DIR [--listen ADDR]",
		Short: "Serve the Operator API, the soul stream, metrics and health on one listener",
		Long: `Serve the keeper initialized in --data-dir: the Operator API (/v1/...), the
soul stream, /metrics, /healthz and /readyz on one listener. Each connection is
sniffed: TLS connections get HTTP/2 or HTTP/1.1 over TLS (the only place souls
connect), plain ones HTTP/1.1 or h2c. Plain HTTP carries Archon tokens in
clear: in production turn it off (--plain-http=false, or plain_http: false in
the config) and call the keeper with https:// pinning its CA. Tokens are
verified with the signing key file (--signing-key-file, default
<data-dir>/signing.key); a key an older version kept in the database is moved
into that file at start.
A keeper refuses to start on an empty or missing database (or, on SQLite, one
that fails its integrity check): restore it from a backup, or give
--reinitialize to start again with an empty store on purpose.
SIGTERM drains in-flight requests, closes the soul streams and the store.`,
		Args: cobra.NoArgs,
	}
	fl := config.BindFlags(c.Flags(), "data-dir", "listen", "database-url", "keeper-id", "advertise-address", "log-format", "log-level",
		"tls-cert", "tls-key", "git-ssh-key", "task-timeout", "shutdown-timeout", "fan-out", "plain-http", "signing-key-file",
		"max-souls", "rebalance")
	c.Flags().StringVar(&cfgFile, "config", "", "YAML configuration file (flags override it)")
	c.Flags().BoolVar(&reinitialize, "reinitialize", false, "start even if the database is empty or missing (its data was lost: everything starts again empty)")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := config.Load(cfgFile)
		if err != nil {
			return cmdutil.Usage(err)
		}
		fl.Apply(&cfg)
		if err := cfg.Validate(); err != nil {
			return cmdutil.Usage(err)
		}
		log, err := cfg.Logger(cmd.ErrOrStderr())
		if err != nil {
			return cmdutil.Usage(err)
		}
		log.Info("garbage collector", "settings", ApplyGCDefaults(os.Getenv).String())
		tp, stopTraces, err := tracing.Setup(cmd.Context(), "soulstack-keeper", version.Get().Version, os.Getenv)
		if err != nil {
			return cmdutil.Usage(err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 5*time.Second)
			defer cancel()
			if err := stopTraces(ctx); err != nil {
				log.Warn("flushing traces", "err", err)
			}
		}()
		if ep := tracing.Endpoint(os.Getenv); ep != "" {
			log.Info("traces exported over OTLP/HTTP", "endpoint", ep)
		}
		k, err := keeper.New(cmd.Context(), keeper.Config{Keeper: cfg, Logger: log, Reinitialize: reinitialize, TracerProvider: tp})
		if err != nil {
			if domain.ErrorCode(err) == domain.CodeInvalid {
				return cmdutil.Usage(err)
			}
			return cmdutil.Failed(err)
		}
		// SIGHUP reloads the TLS certificate without dropping souls.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer func() { signal.Stop(hup); close(hup) }()
		go func() {
			for range hup {
				if err := k.ReloadTLS(); err != nil {
					log.Error("SIGHUP: the TLS certificate was not reloaded", "err", err)
				}
			}
		}()
		if err := k.Run(cmd.Context()); err != nil {
			return cmdutil.Failed(err)
		}
		return nil
	}
	return c
}
