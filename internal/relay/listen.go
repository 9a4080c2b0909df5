package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/store"
)

// Notification payloads: a kind and a relay batch id, or for
// msgDisconnect a soul's SID.
const (
	msgWork       = 'w' // to the target: batch id has work for you
	msgResult     = 'r' // to the sender: batch id has results for you (or is done)
	msgCancel     = 'c' // to the target: the sender gave up on batch id
	msgDisconnect = 'd' // to the keeper holding a soul's stream: close it (the soul was rejected)
)

// disconnectReason is what a soul whose stream is closed on another
// keeper's word is told.
const disconnectReason = "rejected by an Archon (through another keeper)"

// keepalive is how long the listener waits for a notification before it
// pings its connection (a server that vanished without closing it).
const keepalive = 30 * time.Second

// notify sends kind:id on keeper to's channel.
func (r *Relay) notify(ctx context.Context, to string, kind byte, id int64) error {
	return r.notifyPayload(ctx, to, string(kind)+":"+strconv.FormatInt(id, 10))
}

// notifyPayload sends payload on keeper to's channel.
func (r *Relay) notifyPayload(ctx context.Context, to, payload string) error {
	if _, err := r.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, Channel(to), payload); err != nil {
		return fmt.Errorf("notifying keeper %s: %w", to, err)
	}
	return nil
}

// isAlive reports whether keeper id's listener holds its advisory lock:
// whether the keeper runs. A positive answer is cached for one poll
// interval (the poller re-checks the keepers it waits on).
func (r *Relay) isAlive(ctx context.Context, id string) (bool, error) {
	r.mu.Lock()
	checked, ok := r.alive[id]
	r.mu.Unlock()
	if ok && time.Since(checked) < r.cfg.PollInterval {
		return true, nil
	}
	var alive bool
	err := r.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND ((classid::bigint << 32) | objid::bigint) = $1)`, lockKey(id)).Scan(&alive)
	if err != nil {
		return false, fmt.Errorf("checking that keeper %s runs: %w", id, err)
	}
	r.mu.Lock()
	if alive {
		r.alive[id] = time.Now()
	} else {
		delete(r.alive, id)
	}
	r.mu.Unlock()
	return alive, nil
}

// listen keeps a listener connection up until ctx ends.
func (r *Relay) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for {
		began := time.Now()
		err := r.listenOnce(ctx)
		r.listening.Store(false)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		r.log.Warn("relay listener lost its connection; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenOnce connects, LISTENs, takes the keeper's advisory lock, picks up
// what was addressed here while nobody listened, then handles
// notifications until the connection fails or ctx ends.
func (r *Relay) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, r.pg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{r.self}.Sanitize()); err != nil {
		return err
	}
	// LISTEN first: once the lock shows this keeper running, nothing sent
	// to it can be missed (a row written before is found by the rescan).
	for warned := false; ; {
		var locked bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lockKey(r.cfg.KeeperID)).Scan(&locked); err != nil {
			return err
		}
		if locked {
			break
		}
		if !warned {
			r.log.Warn("another session holds this keeper's relay lock (a previous connection not yet gone, or two keepers sharing one id); retrying", "keeper_id", r.cfg.KeeperID)
			warned = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	r.listening.Store(true)
	r.log.Debug("relay listening", "channel", r.self)
	r.rescan(ctx)
	for {
		wctx, cancel := context.WithTimeout(ctx, keepalive)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			r.handle(ctx, n.Payload)
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("pinging the listener connection: %w", err)
			}
		default:
			return err
		}
	}
}

// handle acts on one notification payload.
func (r *Relay) handle(ctx context.Context, payload string) {
	kind, idText, ok := strings.Cut(payload, ":")
	if ok && kind == string(msgDisconnect) {
		if idText == "" {
			r.log.Warn("ignoring a malformed relay notification", "payload", payload)
			return
		}
		if r.cfg.Local.Disconnect(idText, disconnectReason) {
			r.log.Info("closed a soul's stream on another keeper's word", "sid", idText)
		}
		return
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil || len(kind) != 1 {
		r.log.Warn("ignoring a malformed relay notification", "payload", payload)
		return
	}
	switch kind[0] {
	case msgWork:
		r.serveAsync(id)
	case msgResult:
		r.wake(id)
	case msgCancel:
		r.cancelServed(id)
	default:
		r.log.Warn("ignoring a relay notification of unknown kind", "payload", payload)
	}
}

// rescan serves the pending batches addressed here and wakes the waits
// on batches this keeper sent: the notifications sent while the listener
// was not listening are lost.
func (r *Relay) rescan(ctx context.Context) {
	pending, err := r.st.ListRelayBatches(ctx, store.RelayFilter{ToKeeper: r.cfg.KeeperID, Status: store.RelayPending})
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("looking for relayed work", "err", err)
		}
		return
	}
	for _, b := range pending {
		r.serveAsync(b.ID)
	}
	r.wakeAll()
}

// poll now and then prunes batches abandoned long ago (each wait checks
// its own keeper's liveness and collects its own results).
func (r *Relay) poll(ctx context.Context) {
	tick := time.NewTicker(r.cfg.PollInterval)
	defer tick.Stop()
	lastPrune := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(lastPrune) > 10*time.Minute {
			lastPrune = time.Now()
			if n, err := r.st.PruneRelays(ctx, time.Now().Add(-pruneAge)); err != nil && ctx.Err() == nil {
				r.log.Warn("pruning abandoned relay batches", "err", err)
			} else if n > 0 {
				r.log.Info("pruned abandoned relay batches", "count", n)
			}
		}
	}
}
