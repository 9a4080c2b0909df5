package keeper

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/store"
)

// Leadership for singleton duties (cron schedules, run-on-vip procedures,
// cleaning up after dead keepers; SPEC §10.4).
//
// On PostgreSQL the leader is the keeper whose dedicated connection holds
// a session advisory lock. A killed leader's connection closes with its
// process, so the lock is free at once and a survivor (trying every
// leaderPoll) leads within a second. A leader whose session the database
// ends (a restart, pg_terminate_backend) stops leading at once: between
// pings it waits on the connection, which sees the close. A leader cut
// off from the database notices at its next ping (every leaderPoll,
// timing out after leaderPingTimeout) and stops leading; the server drops the cut-off
// session only after its TCP keepalive gives up (leaderKeepalive: idle 3 s
// + 3 probes 1 s apart), later than that, so the old leader stops before a
// new one can start. Tick claims in the store make a double schedule run
// impossible even so.
//
// On SQLite (one keeper) the store lease is kept: the keeper always leads.
const (
	leaderLease       = "keeper.leader"
	leaderTTL         = 30 * time.Second
	leaderInterval    = 10 * time.Second
	leaderPoll        = time.Second
	leaderPingTimeout = 1500 * time.Millisecond
)

// leaderKeepalive are the server-side TCP keepalive settings of the
// leader's connection: a session whose client vanished is dropped (and its
// lock released) within about six seconds.
var leaderKeepalive = map[string]string{
	"tcp_keepalives_idle":     "3",
	"tcp_keepalives_interval": "1",
	"tcp_keepalives_count":    "3",
}

// leaderLockKey is the advisory lock the leader holds.
var leaderLockKey = func() int64 {
	sum := sha256.Sum256([]byte("soulstack keeper leader"))
	return int64(binary.BigEndian.Uint64(sum[:8]) &^ (1 << 63))
}()

// leaderApp is the application_name of keeper id's leader connection:
// other keepers find the leader by it (pg_stat_activity).
func leaderApp(id string) string { return "soulstack-leader " + id }

// leader tracks whether this keeper leads. gained receives (without
// blocking) whenever it starts leading.
type leader struct {
	st     store.Store
	id     string
	pg     *pgx.ConnConfig // nil: SQLite lease
	log    *slog.Logger
	is     atomic.Bool
	gained chan struct{}
}

func newLeader(st store.Store, id, databaseURL string, log *slog.Logger) (*leader, error) {
	l := &leader{st: st, id: id, log: log, gained: make(chan struct{}, 1)}
	if databaseURL == "" {
		return l, nil
	}
	pc, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	pc.RuntimeParams["application_name"] = leaderApp(id)
	for k, v := range leaderKeepalive {
		pc.RuntimeParams[k] = v
	}
	l.pg = pc
	return l, nil
}

func (l *leader) IsLeader() bool { return l.is.Load() }

// set records whether this keeper leads and signals a gain.
func (l *leader) set(ok bool) {
	if was := l.is.Swap(ok); was == ok {
		return
	}
	l.log.Info("leadership changed", "leader", ok)
	if ok {
		select {
		case l.gained <- struct{}{}:
		default:
		}
	}
}

// run keeps leadership (or tries to get it) until ctx ends, then gives it
// up.
func (l *leader) run(ctx context.Context, onGain func()) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.gained:
				if onGain != nil {
					onGain()
				}
			}
		}
	}()
	if l.pg == nil {
		l.runLease(ctx)
		return
	}
	l.runLock(ctx)
}

// runLease renews the store lease (SQLite).
func (l *leader) runLease(ctx context.Context) {
	tick := time.NewTicker(leaderInterval)
	defer tick.Stop()
	for {
		ok, err := l.st.TryLease(ctx, leaderLease, l.id, leaderTTL, time.Now())
		if err != nil && ctx.Err() == nil {
			l.log.Warn("leader lease", "err", err)
			ok = false
		}
		l.set(ok && ctx.Err() == nil)
		select {
		case <-ctx.Done():
			l.set(false)
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = l.st.ReleaseLease(rctx, leaderLease, l.id)
			cancel()
			return
		case <-tick.C:
		}
	}
}

// runLock holds the advisory lock on a dedicated connection (PostgreSQL).
func (l *leader) runLock(ctx context.Context) {
	defer l.set(false)
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.ConnectConfig(cctx, l.pg.Copy())
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("leader: connecting to the database", "err", err)
			}
			l.set(false)
			sleepCtx(ctx, leaderPoll)
			continue
		}
		l.holdLock(ctx, conn)
		// Closing the session releases the lock (if it still exists).
		cctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		_ = conn.Close(cctx)
		cancel()
	}
}

// holdLock tries the lock, then pings the connection every leaderPoll
// while it holds it; it returns (not leading) when the connection fails or
// ctx ends.
func (l *leader) holdLock(ctx context.Context, conn *pgx.Conn) {
	for {
		pctx, cancel := context.WithTimeout(ctx, leaderPingTimeout)
		var err error
		if l.is.Load() {
			err = conn.Ping(pctx)
		} else {
			var got bool
			err = conn.QueryRow(pctx, `SELECT pg_try_advisory_lock($1)`, leaderLockKey).Scan(&got)
			if err == nil && got {
				l.set(true)
			}
		}
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("leader: the lock's connection failed; not leading until it is back", "err", err)
			}
			l.set(false)
			return
		}
		if !l.is.Load() {
			if !sleepCtx(ctx, leaderPoll) {
				return
			}
			continue
		}
		// Leading: wait on the connection itself until the next ping, so a
		// session the database ends (a restart, pg_terminate_backend, a
		// proxy dropping it) ends leadership at once, when the lock is
		// free for another keeper — not at the next ping.
		wctx, cancel := context.WithTimeout(ctx, leaderPoll)
		err = conn.PgConn().WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			l.set(false)
			return
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			l.log.Warn("leader: the lock's connection ended; not leading until it is back", "err", err)
			l.set(false)
			return
		}
	}
}

// sleepCtx sleeps d unless ctx ends first; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
