// Package keeper is the composition root of the Keeper process: from a
// Config it opens the store, loads the TLS material, and builds auth, the
// service catalog, the soul gateway and the Operator API (later the run
// engine, the Checker and the UI hang off the same Keeper), then serves
// them all on one listener.
//
// The listener sniffs the first byte of each connection: a TLS ClientHello
// goes to TLS (HTTP/2 and HTTP/1.1 by ALPN) — the only place the soul
// stream is served — and anything else to plain HTTP/1.1 or h2c, where the
// Operator API, UI, metrics and health answer, so `curl
// http://keeper:8080/v1/...` works as the seeds show. Plain HTTP sends
// Archon tokens in clear: in production turn it off (plain_http: false),
// and call the keeper with https:// (the same port) pinning its CA.
package keeper

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/soulstack/soulstack/internal/api"
	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/cloud"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/gateway"
	"github.com/soulstack/soulstack/internal/healthkeeper"
	"github.com/soulstack/soulstack/internal/install"
	_ "github.com/soulstack/soulstack/internal/module/core" // the modules services are validated against
	"github.com/soulstack/soulstack/internal/netguard"
	"github.com/soulstack/soulstack/internal/notify"
	"github.com/soulstack/soulstack/internal/relay"
	"github.com/soulstack/soulstack/internal/rules"
	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/ui"

	"go.opentelemetry.io/otel/trace"
)

// Config configures a Keeper: the operator-facing settings plus what only
// code can give.
type Config struct {
	config.Keeper
	// Logger receives the keeper's logs; nil builds one from LogFormat and
	// LogLevel on stderr.
	Logger *slog.Logger
	// Reinitialize lets the keeper start on an empty or missing database
	// in an initialized data directory (serve --reinitialize); without it
	// that is refused, as the database was most likely lost.
	Reinitialize bool
	// IntegrityCheckTimeout bounds the store's integrity check at start;
	// 0 means DefaultIntegrityCheckTimeout.
	IntegrityCheckTimeout time.Duration
	// TracerProvider receives the runs' spans (internal/tracing; serve
	// sets it up from OTEL_EXPORTER_OTLP_ENDPOINT); nil means none.
	TracerProvider trace.TracerProvider
}

// Keeper is one running Keeper process's components.
type Keeper struct {
	cfg Config
	log *slog.Logger
	id  string
	// cert is the certificate new TLS handshakes get; ReloadTLS swaps it.
	cert atomic.Pointer[tls.Certificate]

	store     store.Store
	auth      *auth.Authority
	catalog   *catalog.Catalog
	gateway   *gateway.Gateway
	relay     *relay.Relay
	api       *api.Server
	engine    *engine.Engine
	health    *healthkeeper.Manager
	checker   *checker.Checker
	rules     *rules.Engine
	notifier  *notify.Notifier
	secrets   *secrets.Store
	clouds    *cloud.Manager
	ui        *ui.UI
	leader    *leader
	commander *selfCommander
	registry  *prometheus.Registry
	tls       *tls.Config
	fp        string
	handler   http.Handler
	addr      net.Addr // the listener's, once Serve runs
	integrity integrity
}

// New opens the store and builds every component. The keeper must have
// been initialized (Init). Close releases what New opened.
func New(ctx context.Context, cfg Config) (k *Keeper, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("keeper config: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		if log, err = cfg.Keeper.Logger(os.Stderr); err != nil {
			return nil, err
		}
	}
	cfg.Logger = log
	k = &Keeper{cfg: cfg, log: log}
	// Every error return below sets the named k to nil: release what was
	// opened through its own pointer.
	built := k
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	// Nothing is written into the data directory before it is known to
	// be an initialized keeper's.
	if k.tls, k.fp, err = loadTLS(cfg.Keeper); err != nil {
		return nil, err
	}
	k.serveCertificate()
	if err = checkInitialized(ctx, cfg.Keeper, cfg.Reinitialize); err != nil {
		return nil, err
	}
	if cfg.Reinitialize {
		log.Warn("--reinitialize: starting even if the database is empty or missing")
	}
	if err = startIntegrityCheck(ctx, cfg); err != nil {
		return nil, err
	}
	if k.id, err = keeperID(cfg.Keeper); err != nil {
		return nil, err
	}
	if k.store, err = openStore(ctx, cfg.Keeper); err != nil {
		return nil, err
	}
	if k.auth, err = auth.New(ctx, k.store, cfg.SigningKeyFile()); err != nil {
		return nil, err
	}
	// The secrets key lives beside the signing key, created on first
	// start (SPEC §10.5); keepers sharing a database share it.
	secretsKey, err := secrets.LoadOrCreateKey(secrets.KeyFile(cfg.SigningKeyFile()))
	if err != nil {
		return nil, err
	}
	if k.secrets, err = secrets.New(k.store, secretsKey); err != nil {
		return nil, err
	}
	// Cloud providers stored before their env was sealed (N3) are sealed
	// now: their API tokens leave the database's plain text.
	if sealed, err := cloud.SealStoredProviders(ctx, k.store, k.secrets); err != nil {
		return nil, err
	} else if len(sealed) > 0 {
		log.Warn("sealed the env of cloud providers stored in plain text; their old values may remain in database backups and logs of the write-ahead log: rotate those API tokens", "providers", sealed)
	}
	k.catalog, err = catalog.New(catalog.Config{
		Dir: cfg.ServicesDir(), Store: k.store, SSHKeyFile: cfg.Git.SSHKeyFile, Logger: log.With("component", "catalog"),
		MaxTreeBytes: int64(cfg.Services.MaxTreeSize),
	})
	if err != nil {
		return nil, err
	}
	k.gateway = gateway.New(gateway.Config{
		Store:               k.store,
		KeeperID:            k.id,
		Fingerprint:         k.fp,
		Logger:              log,
		FanOut:              cfg.FanOut,
		DefaultTimeout:      cfg.TaskTimeout.D(),
		HeartbeatInterval:   cfg.HeartbeatInterval.D(),
		MaxSoulMessageBytes: int(cfg.SoulMaxMessageSize),
		MaxSouls:            cfg.MaxSouls,
		// The engine is built next; the gateway delivers nothing before
		// Serve runs it. RecordLate queues, never blocking the reader.
		OnLateResult: func(sid, runID, taskID string, r domain.Result) {
			k.engine.RecordLate(sid, runID, taskID, r)
		},
		// Health (SPEC §14.1): built right below, before Serve runs.
		OnHealth: func(sid string, b []byte) { k.health.OnHealth(sid, b) },
		OnVitals: func(sid string, b []byte) { k.health.OnVitals(sid, b) },
		OnWelcome: func(sid string) {
			k.health.OnWelcome(sid)
			k.soulEvent(dsl.EventSoulConnected, sid)
		},
		OnGone: func(sid string) { k.soulEvent(dsl.EventSoulDisconnected, sid) },
	})
	// Souls may hold their streams to another keeper on the same
	// PostgreSQL: the engine dispatches through the relay, which reaches
	// them through the database (a pass-through to the gateway on SQLite).
	keys, err := derivedKeys(cfg.Keeper, keyTaskIDs, keyRelay)
	if err != nil {
		return nil, err
	}
	relayURL := ""
	if cfg.Postgres() {
		relayURL = cfg.DatabaseURL
	}
	k.relay, err = relay.New(relay.Config{
		Store:          k.store,
		Local:          k.gateway,
		KeeperID:       k.id,
		DatabaseURL:    relayURL,
		SealKey:        keys[keyRelay],
		DefaultTimeout: cfg.TaskTimeout.D(),
		Logger:         log,
	})
	if err != nil {
		return nil, err
	}
	httpPolicy, err := netguard.New(cfg.HTTP.Allow)
	if err != nil {
		return nil, fmt.Errorf("keeper config: %w", err)
	}
	k.registry = prometheus.NewRegistry()
	k.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		k.integrityMetric())
	k.health, err = healthkeeper.New(healthkeeper.Config{
		Store:     k.store,
		Services:  k.catalog,
		Send:      k.gateway.SendHealth,
		Connected: k.gateway.ConnectedSIDs,
		Registry:  k.registry,
		Logger:    log.With("component", "health"),
		OnChange:  func(c healthkeeper.Change) { k.onHealthChange(c) },
	})
	if err != nil {
		return nil, err
	}
	k.clouds = k.newCloud()
	k.newRules()
	k.engine, err = engine.New(engine.Config{
		Cloud:      cloudFunc(k.clouds),
		OnRunEnd:   k.onRunEnd,
		Secrets:    k.secrets,
		Store:      k.store,
		Dispatcher: k.relay,
		Local: &dispatch.Local{
			Root:           filepath.Join(cfg.DataDir, "keeper-root"),
			DefaultTimeout: cfg.TaskTimeout.D(),
			Logger:         log.With("component", "keeper-local"),
			HTTP:           httpPolicy,
		},
		Services:       k.catalog,
		KeeperID:       k.id,
		Logger:         log.With("component", "engine"),
		DefaultTimeout: cfg.TaskTimeout.D(),
		FanOut:         cfg.FanOut,
		MaxLoopItems:   cfg.Runs.MaxLoopItems,
		Metrics:        engine.NewMetrics(k.registry),
		TaskKey:        keys[keyTaskIDs],
		TracerProvider: cfg.TracerProvider,
	})
	if err != nil {
		return nil, err
	}
	if k.leader, err = newLeader(k.store, k.id, relayURL, log.With("component", "leader")); err != nil {
		return nil, err
	}
	k.commander = &selfCommander{}
	k.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "soulstack_leader", Help: "1 while this keeper leads (runs schedules, run-on-vip procedures and the cleanup after dead keepers), else 0.",
		ConstLabels: prometheus.Labels{"keeper_id": k.id},
	}, func() float64 {
		if k.leader.IsLeader() {
			return 1
		}
		return 0
	}))
	relayLabels := prometheus.Labels{"keeper_id": k.id}
	k.registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "soulstack_relay_batches_written_total", Help: "Rows of work this keeper relayed to other keepers (one per dispatch and keeper, however many souls).",
			ConstLabels: relayLabels,
		}, func() float64 { return float64(k.relay.Stats().Batches) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "soulstack_relay_result_rows_written_total", Help: "Rows of results this keeper wrote back for work relayed to it (each holds the souls that answered since the last).",
			ConstLabels: relayLabels,
		}, func() float64 { return float64(k.relay.Stats().ResultRows) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "soulstack_relay_bytes_written_total", Help: "Payload bytes (compressed and sealed) of the relay rows this keeper wrote.",
			ConstLabels: relayLabels,
		}, func() float64 { return float64(k.relay.Stats().Bytes) }),
	)
	k.checker, err = checker.New(checker.Config{
		Secrets:        k.secrets,
		Store:          k.store,
		Commander:      k.commander,
		IsCommand:      cli.HasCommand,
		Bindings:       cfg.Checker.Bindings,
		DefaultTimeout: cfg.Checker.DefaultTimeout.D(),
		MaxTaskWork:    cfg.Checker.MaxTaskWork,
		MaxTaskLogRows: cfg.Checker.MaxTaskLogRows,
		IsLeader:       k.leader.IsLeader,
		KeeperID:       k.id,
		Logger:         log.With("component", "checker"),
		Metrics:        checker.NewMetrics(k.registry),
		Forward:        k.forwardExecute,
		InputGuard:     k.guardSecretInputs,
	})
	if err != nil {
		return nil, err
	}
	k.api, err = api.New(api.Config{
		Cloud:            k.clouds,
		Secrets:          k.secrets,
		Rules:            k.rules,
		Notifier:         k.notifier,
		Engine:           k.engine,
		Checker:          k.checker,
		Store:            k.store,
		Auth:             k.auth,
		Catalog:          k.catalog,
		Souls:            api.StoreSouls{Store: k.store, Disconnect: k.relay.Disconnect},
		Fingerprint:      k.fp,
		TLSPin:           install.PublicKeyPin(k.tls),
		Install:          newInstallServer(cfg.Keeper, k.tls, k.fp, log),
		KeeperID:         k.id,
		CheckerArchon:    checkerArchon,
		Leader:           k.leader.find,
		Health:           k.health,
		HealthStaleAfter: cfg.HealthStaleAfter.D(),
		Registry:         k.registry,
		StoreIntegrity:   k.integrity.failed,
		Load:             api.Load{MaxInFlight: cfg.API.MaxInFlight, MaxWait: cfg.API.MaxWait.D()},
		Logger:           log.With("component", "api"),
	})
	if err != nil {
		return nil, err
	}
	k.ui, err = ui.New(ui.Config{
		Store:            k.store,
		Auth:             k.auth,
		Events:           ui.Subscriber(k.engine.Subscribe),
		API:              k.api.Handler(),
		Services:         k.catalog,
		TLSPin:           install.PublicKeyPin(k.tls),
		HealthStaleAfter: cfg.HealthStaleAfter.D(),
		SessionTTL:       cfg.Auth.UISessionTTL.D(),
		SessionIdle:      cfg.Auth.UISessionIdle.D(),
		Logger:           log.With("component", "ui"),
	})
	if err != nil {
		return nil, err
	}
	k.api.Mount("/ui/", k.ui.Handler())
	k.api.Mount("/ui", k.ui.Handler())
	mux := http.NewServeMux()
	pattern, stream := k.gateway.Handler()
	mux.Handle(pattern, api.Recover(log.With("component", "gateway"), stream))
	mux.Handle("/", k.api.Handler())
	k.handler = mux
	return k, nil
}

// Run listens on the configured address and serves until ctx ends, then
// shuts down gracefully and closes the store.
func (k *Keeper) Run(ctx context.Context) error {
	defer k.Close()
	ln, err := net.Listen("tcp", k.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", k.cfg.Listen, err)
	}
	return k.Serve(ctx, ln)
}

// Serve serves on ln (plain and TLS connections alike) until ctx ends, then
// shuts down: the gateway closes the soul streams, the HTTP server drains
// in-flight requests (up to ShutdownTimeout). It closes ln but not the
// store.
func (k *Keeper) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           k.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(k.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(true)

	if aborted, err := k.engine.Recover(ctx); err != nil {
		return fmt.Errorf("recovering runs: %w", err)
	} else if len(aborted) > 0 {
		k.log.Warn("runs aborted by the keeper's restart", "count", len(aborted))
	}
	if n, err := k.checker.Recover(ctx); err != nil {
		return fmt.Errorf("recovering checker tasks: %w", err)
	} else if n > 0 {
		k.log.Warn("checker tasks failed by the keeper's restart", "count", n)
	}
	if err := k.relay.Recover(ctx); err != nil {
		return fmt.Errorf("recovering relayed work: %w", err)
	}
	k.addr = ln.Addr()
	if err := k.register(ctx); err != nil {
		return fmt.Errorf("registering the keeper and connecting its checker to the API: %w", err)
	}
	relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRelay()
	relayDone := make(chan error, 1)
	go func() { relayDone <- k.relay.Run(relayCtx) }()
	bg := k.startBackground(ctx)

	gwCtx, stopGateway := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGateway()
	gwDone := make(chan error, 1)
	go func() { gwDone <- k.gateway.Run(gwCtx) }()

	lnTLS := k.tls
	if k.cfg.SoulLeanStream {
		// Souls offering ALPN soulstack/1 get the lean stream (one
		// goroutine per soul); everyone else HTTP/2 or HTTP/1.1.
		lnTLS = k.tls.Clone()
		k.gateway.EnableLean(srv, lnTLS)
	}
	sl := newSniffListener(ln, lnTLS, k.cfg.PlainHTTP)
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(sl) }()
	k.log.InfoContext(ctx, "keeper serving", "addr", ln.Addr().String(), "keeper_id", k.id, "ca_fingerprint", k.fp)

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-gwDone:
		gwDone <- err
		runErr = fmt.Errorf("soul gateway stopped: %w", err)
	case err := <-srvDone:
		srvDone <- err
		runErr = fmt.Errorf("http server stopped: %w", err)
	}

	k.log.Info("keeper shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), k.cfg.ShutdownTimeout.D())
	defer cancel()
	bg.stop()
	if err := k.checker.Close(); err != nil {
		k.log.Warn("closing the checker", "err", err)
	}
	if err := k.engine.Close(shutdownCtx); err != nil {
		k.log.Warn("closing the run engine", "err", err)
	}
	// The relay stops while the gateway still runs: work it serves for
	// other keepers is answered (unreachable) before the streams close.
	stopRelay()
	if err := <-relayDone; err != nil {
		k.log.Warn("stopping the relay", "err", err)
	}
	stopGateway()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		k.log.Warn("graceful shutdown timed out; closing connections", "err", err)
		_ = srv.Close()
	}
	if err := <-srvDone; err != nil && !errors.Is(err, http.ErrServerClosed) && runErr == nil {
		runErr = fmt.Errorf("http server: %w", err)
	}
	if err := <-gwDone; err != nil && runErr == nil {
		runErr = err
	}
	k.unregister(shutdownCtx)
	k.log.Info("keeper stopped")
	return runErr
}

// selfTLS is how the Checker reaches this keeper's own API: nil for plain
// HTTP on loopback, or (plain HTTP off) https pinning the keeper's CA.
func (k *Keeper) selfTLS() []apiclient.Option {
	if k.cfg.PlainHTTP {
		return nil
	}
	return []apiclient.Option{apiclient.WithFingerprint(k.fp)}
}

// Close releases the store (and the relay's connections). It is safe to
// call more than once.
func (k *Keeper) Close() error {
	if k.store == nil {
		return nil
	}
	if k.relay != nil {
		if err := k.relay.Close(); err != nil {
			k.log.Warn("closing the relay", "err", err)
		}
	}
	st := k.store
	k.store = nil
	if err := st.Close(); err != nil {
		return fmt.Errorf("closing store: %w", err)
	}
	return nil
}

// ID is this keeper's id among keepers sharing a database.
func (k *Keeper) ID() string { return k.id }

// IsLeader reports whether this keeper leads the keepers on its database
// (always, once serving, on SQLite).
func (k *Keeper) IsLeader() bool { return k.leader.IsLeader() }

// Store returns the keeper's store.
func (k *Keeper) Store() store.Store { return k.store }

// Auth returns the Archon authority.
func (k *Keeper) Auth() *auth.Authority { return k.auth }

// Catalog returns the service catalog.
func (k *Keeper) Catalog() *catalog.Catalog { return k.catalog }

// Gateway returns the soul gateway: the streams of the souls connected to
// this keeper.
func (k *Keeper) Gateway() *gateway.Gateway { return k.gateway }

// Relay returns the engine's Dispatcher for souls: the gateway, and through
// PostgreSQL the souls connected to the other keepers on the database.
func (k *Keeper) Relay() *relay.Relay { return k.relay }

// Engine returns the run engine.
func (k *Keeper) Engine() *engine.Engine { return k.engine }

// Checker returns the Checker.
func (k *Keeper) Checker() *checker.Checker { return k.checker }

// API returns the Operator API server (to mount more handlers on).
func (k *Keeper) API() *api.Server { return k.api }

// Registry returns the Prometheus registry served at /metrics.
func (k *Keeper) Registry() *prometheus.Registry { return k.registry }

// Fingerprint is the SHA-256 fingerprint of the keeper's CA, which souls
// and https clients pin.
func (k *Keeper) Fingerprint() string { return k.fp }

// Handler serves everything the keeper serves (tests mount it on their own
// listeners).
func (k *Keeper) Handler() http.Handler { return k.handler }

// newInstallServer serves install.sh and the soul binaries from
// cfg.SoulDir, else next to the keeper executable and /usr/lib/soulstack.
func newInstallServer(cfg config.Keeper, tc *tls.Config, fp string, log *slog.Logger) *install.Server {
	dirs := install.DefaultSoulDirs()
	if cfg.SoulDir != "" {
		dirs = []string{cfg.SoulDir}
	}
	return &install.Server{Binaries: &install.SoulBinaries{Dirs: dirs}, TLSPin: install.PublicKeyPin(tc), Fingerprint: fp, Logger: log.With("component", "install")}
}

// Secrets is the keeper's secret store (SPEC §10.5).
func (k *Keeper) Secrets() *secrets.Store { return k.secrets }
