// Package relay lets several keepers on one PostgreSQL database serve runs
// over souls connected to any of them (SPEC §10.4). Relay is the engine's
// dispatch.Dispatcher: work for a soul connected to this keeper goes to the
// local soul gateway; the work of one dispatch for the souls whose streams
// another keeper holds (found in one query) is written as one batch row
// per keeper — each distinct work once, then a SID and TaskID per soul,
// compressed and sealed — and announced to that keeper with NOTIFY. That
// keeper runs the batch through its own gateway and writes the results
// back in rows of many souls as they arrive (every FlushInterval),
// NOTIFYing after each, so progress stays live and a fan-out over 19,000
// souls of another keeper costs a handful of rows, not 19,000. Only row
// ids travel in notifications (their payloads are limited to 8000 bytes);
// work and results stay in the rows.
//
// Each keeper LISTENs on its own channel over one dedicated connection,
// which also holds a session advisory lock named after the keeper: a
// keeper whose lock nobody holds is not running (its connection went away
// with its process), so work for its souls is unreachable at once instead
// of waiting out a timeout. Notifications are an optimization, not the
// only path: a keeper rescans the rows addressed to it whenever its
// listener (re)connects, and while it waits for relayed results it polls
// for finished rows and for the liveness of the keepers it waits on.
//
// With SQLite (one keeper) there is nobody to relay to and Relay passes
// every request to the local gateway.
package relay

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// Defaults of Config's optional fields.
const (
	DefaultTaskTimeout   = 10 * time.Minute
	DefaultPollInterval  = time.Second
	DefaultFlushInterval = 100 * time.Millisecond
)

// relayGrace is how much longer than the target keeper's own bound (the
// task timeout plus the gateway's grace) the sending keeper waits: the
// target's timeout result, with its message, should win.
const relayGrace = 5 * time.Second

// pruneAge is how long after its deadline an abandoned row is deleted.
const pruneAge = time.Hour

// Local is this keeper's soul gateway as the relay sees it.
type Local interface {
	dispatch.Dispatcher
	// Connected reports whether sid holds a stream to this keeper.
	Connected(sid string) bool
	// Disconnect closes sid's stream to this keeper, if it has one, and
	// reports whether it had.
	Disconnect(sid, reason string) bool
}

// Config configures a Relay.
type Config struct {
	// Store holds the souls (which keeper holds each stream) and the relay
	// rows.
	Store store.Store
	// Local is this keeper's gateway.
	Local Local
	// KeeperID names this keeper in the store.
	KeeperID string
	// DatabaseURL is the PostgreSQL database the keepers share; "" (SQLite)
	// makes the Relay a pass-through to Local.
	DatabaseURL string
	// DefaultTimeout applies to work without its own Timeout (the
	// gateway's default, so both keepers bound the work alike); 0 means
	// DefaultTaskTimeout.
	DefaultTimeout time.Duration
	// FlushInterval is how often a keeper serving relayed work writes the
	// results gathered since the last write (one row, however many
	// souls); 0 means DefaultFlushInterval.
	FlushInterval time.Duration
	// PollInterval is how often, while results are awaited, the relay
	// checks that the keepers it waits on are still running and looks for
	// finished rows whose notification was lost; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives relay events; nil discards them.
	Logger *slog.Logger
	// SealKey (32 bytes, the same on every keeper of the database) seals
	// the work and results of relay rows; required with DatabaseURL.
	SealKey []byte
}

// Relay is a dispatch.Dispatcher that reaches souls connected to any
// keeper on the database. Run must be running for relayed work to be
// served and answered.
type Relay struct {
	cfg   Config
	log   *slog.Logger
	st    store.Store
	pg    *pgx.ConnConfig // nil: pass-through
	db    *sql.DB         // NOTIFY and liveness queries; the listener has its own connection
	self  string          // this keeper's channel
	codec *codec          // compresses and seals relay rows; nil: pass-through
	stats stats

	running   atomic.Pointer[runState]
	listening atomic.Bool

	mu    sync.Mutex
	waits map[int64]*wait      // relayed batches this keeper awaits, by row id
	alive map[string]time.Time // keeper id → when it was last seen running
}

var _ dispatch.Dispatcher = (*Relay)(nil)

// runState is what exists while Run runs: the context of served work and
// the goroutines serving it.
type runState struct {
	ctx     context.Context
	wg      sync.WaitGroup
	mu      sync.Mutex
	serving map[int64]context.CancelCauseFunc
}

// New returns a Relay. With a PostgreSQL DatabaseURL it prepares (but does
// not open) its connections; Close releases them.
func New(cfg Config) (*Relay, error) {
	if cfg.Store == nil || cfg.Local == nil || cfg.KeeperID == "" {
		return nil, errors.New("relay.New: Store, Local and KeeperID are required")
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultTaskTimeout
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Relay{
		cfg:   cfg,
		log:   log.With("component", "relay"),
		st:    cfg.Store,
		self:  Channel(cfg.KeeperID),
		waits: map[int64]*wait{},
		alive: map[string]time.Time{},
	}
	if cfg.DatabaseURL == "" {
		return r, nil
	}
	seal, err := newSealer(cfg.SealKey)
	if err != nil {
		return nil, err
	}
	if r.codec, err = newCodec(seal); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	pc, err := pgx.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, &domain.Error{Code: domain.CodeInvalid, Message: "relay: invalid database URL", Err: err}
	}
	pc.RuntimeParams["application_name"] = "soulstack-relay " + cfg.KeeperID
	// The server drops a session whose keeper vanished (a cut network)
	// within seconds, releasing its relay lock: other keepers then see it
	// gone (the default keepalive would take hours).
	for k, v := range map[string]string{"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "1", "tcp_keepalives_count": "3"} {
		if _, set := pc.RuntimeParams[k]; !set {
			pc.RuntimeParams[k] = v
		}
	}
	r.pg = pc
	r.db = stdlib.OpenDB(*pc.Copy())
	r.db.SetMaxOpenConns(4)
	r.db.SetMaxIdleConns(4)
	r.db.SetConnMaxIdleTime(5 * time.Minute)
	return r, nil
}

// Enabled reports whether the relay reaches other keepers (PostgreSQL).
func (r *Relay) Enabled() bool { return r.pg != nil }

// Listening reports whether Run's listener is up: connected, listening and
// holding this keeper's relay lock, so other keepers see it running.
func (r *Relay) Listening() bool { return r.listening.Load() }

// Close releases the relay's connection pool. Run must have returned.
func (r *Relay) Close() error {
	if r.db == nil {
		return nil
	}
	return r.db.Close()
}

// Recover cleans up after this keeper's previous process (call it before
// dispatching anything): relayed work addressed to it that was not answered
// is answered unreachable — the streams it ran on are gone — and its
// senders are told; rows it sent are deleted, nobody waits for them.
func (r *Relay) Recover(ctx context.Context) error {
	return r.reset(ctx, r.cfg.KeeperID, fmt.Sprintf("keeper %s restarted before the soul answered work relayed to it", r.cfg.KeeperID))
}

// RecoverFor does what Recover does for keeper keeperID, which died: the
// leader's cleanup after it (SPEC §10.4).
func (r *Relay) RecoverFor(ctx context.Context, keeperID string) error {
	return r.reset(ctx, keeperID, fmt.Sprintf("keeper %s, which held the soul's stream, died before the soul answered", keeperID))
}

// IsAlive reports whether keeper id runs: whether its relay listener holds
// its advisory lock (always asked afresh). With SQLite only this keeper
// exists.
func (r *Relay) IsAlive(ctx context.Context, id string) (bool, error) {
	if r.pg == nil {
		return id == r.cfg.KeeperID, nil
	}
	r.mu.Lock()
	delete(r.alive, id)
	r.mu.Unlock()
	return r.isAlive(ctx, id)
}

func (r *Relay) reset(ctx context.Context, keeperID, msg string) error {
	if r.pg == nil {
		return nil
	}
	body, err := r.encodeFallback(domain.Result{Unreachable: true, RC: -1, Msg: msg})
	if err != nil {
		return err
	}
	rows, err := r.st.ResetRelays(ctx, keeperID, body, time.Now())
	if err != nil {
		return fmt.Errorf("relay: resetting relayed work of keeper %s: %w", keeperID, err)
	}
	for _, b := range rows {
		if err := r.notify(ctx, b.FromKeeper, msgResult, b.ID); err != nil {
			r.log.Warn("telling a keeper its relayed work was lost", "to", b.FromKeeper, "id", b.ID, "err", err)
		}
	}
	if len(rows) > 0 {
		r.log.Warn("relayed work lost by the keeper's restart answered unreachable", "batches", len(rows))
	}
	return nil
}

// Run listens for relayed work and results, serves the work through the
// local gateway and watches the keepers this one waits on, until ctx ends.
// Work being served is then answered unreachable (this keeper's streams
// are going away) and Run waits for those answers to be written. With
// SQLite it only waits for ctx.
func (r *Relay) Run(ctx context.Context) error {
	if r.pg == nil {
		<-ctx.Done()
		return nil
	}
	runCtx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	rs := &runState{ctx: runCtx, serving: map[int64]context.CancelCauseFunc{}}
	if !r.running.CompareAndSwap(nil, rs) {
		stop(nil)
		return errors.New("relay: Run is already running")
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.listen(ctx) })
	wg.Go(func() { r.poll(ctx) })
	<-ctx.Done()
	wg.Wait()
	r.running.Store(nil)
	stop(errShuttingDown)
	rs.wg.Wait()
	r.failWaits(domain.Result{Failed: true, RC: -1, Msg: fmt.Sprintf("keeper %s stopped relaying before the result came back", r.cfg.KeeperID)})
	return nil
}

var errShuttingDown = errors.New("keeper shutting down")

// Disconnect closes sid's stream wherever it is held: here, through the
// local gateway, or, when holder (the keeper the store said holds it, ""
// if none) is another keeper, by telling that keeper, whose relay
// listener closes it through its gateway. It reports whether the stream
// was closed here or the holder was told. A holder whose listener is down
// when told misses it (the soul's next hello is refused all the same once
// its record says rejected).
func (r *Relay) Disconnect(ctx context.Context, sid, holder, reason string) bool {
	if r.cfg.Local.Disconnect(sid, reason) {
		return true
	}
	if r.pg == nil || holder == "" || holder == r.cfg.KeeperID {
		return false
	}
	if err := r.notifyPayload(ctx, holder, string(msgDisconnect)+":"+sid); err != nil {
		r.log.Warn("telling a keeper to close a soul's stream", "to", holder, "sid", sid, "err", err)
		return false
	}
	return true
}

// stats counts what this keeper wrote to relay rows.
type stats struct {
	batches    atomic.Int64 // work rows written
	resultRows atomic.Int64 // results rows written
	bytes      atomic.Int64 // bytes of work and results written
}

// Stats is what a keeper's relay wrote to the database since it started.
type Stats struct {
	Batches    int64 // batch rows (work for another keeper's souls)
	ResultRows int64 // results rows (answers to another keeper's batches)
	Bytes      int64 // payload bytes of both
}

// Stats returns what the relay wrote to the database so far.
func (r *Relay) Stats() Stats {
	return Stats{Batches: r.stats.batches.Load(), ResultRows: r.stats.resultRows.Load(), Bytes: r.stats.bytes.Load()}
}

// Channel is the LISTEN/NOTIFY channel of the keeper with id keeperID: a
// hash, so that any keeper id makes a short, safe identifier.
func Channel(keeperID string) string {
	sum := sha256.Sum256([]byte(keeperID))
	return "soulstack_keeper_" + hex.EncodeToString(sum[:8])
}

// lockKey is the advisory lock the keeper's listener connection holds while
// it listens: other keepers test it to know the keeper is running.
func lockKey(keeperID string) int64 {
	sum := sha256.Sum256([]byte("soulstack relay listener " + keeperID))
	return int64(binary.BigEndian.Uint64(sum[:8]) &^ (1 << 63))
}

func unreachable(format string, args ...any) domain.Result {
	return domain.Result{Unreachable: true, RC: -1, Msg: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) domain.Result {
	return domain.Result{Failed: true, RC: -1, Msg: fmt.Sprintf(format, args...)}
}

// grace mirrors the gateway's: how much longer than a task's timeout the
// keeper holding the stream waits for the soul.
func grace(timeout time.Duration) time.Duration {
	return min(max(time.Second, timeout/10), 30*time.Second)
}
