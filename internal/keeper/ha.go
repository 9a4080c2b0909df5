package keeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// What a dead keeper leaves is cleaned within seconds (SPEC §10.4). Every
// keeper writes its heartbeat every keeperHeartbeat; the leader looks at
// the keepers every reapInterval, and one whose heartbeat is older than
// keeperDeadAfter and whose relay lock is gone (its process and its
// connections are) is dead: the leader aborts its unfinished runs (their
// incarnations error_locked), fails its Checker tasks, marks its souls
// disconnected, answers the work relayed to it unreachable, revokes its
// Checker token and deletes its row. With a kill -9 that is about
// keeperDeadAfter + reapInterval after the death (leadership itself moves
// within leaderPoll).
const (
	keeperHeartbeat = time.Second
	keeperDeadAfter = 4 * time.Second
	reapInterval    = time.Second
)

// heartbeat writes this keeper's heartbeat until ctx ends. A keeper that
// finds its row gone was declared dead (cut off from the database longer
// than keeperDeadAfter): it registers again and records its souls
// connected again.
func (k *Keeper) heartbeat(ctx context.Context) {
	for sleepCtx(ctx, keeperHeartbeat) {
		err := k.store.KeeperHeartbeat(ctx, k.id, time.Now())
		switch {
		case err == nil:
		case errors.Is(err, domain.ErrNotFound) && ctx.Err() == nil:
			k.rejoin(ctx)
		case ctx.Err() == nil:
			k.log.Warn("keeper heartbeat", "err", err)
		}
	}
}

// rejoin registers a keeper the leader declared dead again.
func (k *Keeper) rejoin(ctx context.Context) {
	k.log.Error("this keeper was declared dead by the leader (no heartbeat and no relay lock for a while): its runs were aborted and its souls marked disconnected; registering again")
	if err := k.register(ctx); err != nil {
		k.log.Error("registering again", "err", err)
		return
	}
	now := time.Now()
	for _, sid := range k.gateway.ConnectedSIDs() {
		if err := k.store.MarkSoulConnected(ctx, sid, k.id, now); err != nil && ctx.Err() == nil {
			k.log.Warn("recording a soul connected again", "sid", sid, "err", err)
		}
	}
}

// reaper cleans up after dead keepers while this keeper leads: every
// reapInterval, and at once when it gains leadership (now receives).
func (k *Keeper) reaper(ctx context.Context, now <-chan struct{}) {
	if !k.relay.Enabled() {
		return // SQLite: one keeper, which recovers its own leftovers at start
	}
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-now:
		}
		if k.leader.IsLeader() {
			k.reap(ctx)
		}
	}
}

// reap finds the dead keepers and cleans up after them.
func (k *Keeper) reap(ctx context.Context) {
	keepers, err := k.store.ListKeepers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			k.log.Warn("listing keepers", "err", err)
		}
		return
	}
	now := time.Now()
	for _, kr := range keepers {
		if kr.ID == k.id || now.Sub(kr.HeartbeatAt) < keeperDeadAfter {
			continue
		}
		alive, err := k.relay.IsAlive(ctx, kr.ID)
		if err != nil || alive {
			continue // alive: its store writes are slow, but its process runs
		}
		if err := k.cleanUp(ctx, kr, now); err != nil && ctx.Err() == nil {
			k.log.Error("cleaning up after a dead keeper (retried)", "keeper_id", kr.ID, "err", err)
		}
	}
}

// cleanUp does what a dead keeper's own restart would have done (SPEC
// §8.5), then deletes its row. Every step is idempotent: a cleanup cut
// short is done again at the next reap.
func (k *Keeper) cleanUp(ctx context.Context, kr store.KeeperRecord, now time.Time) error {
	runs, err := k.engine.AbortKeeperRuns(ctx, kr.ID)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("keeper %s died while this task was running (no heartbeat since %s); its outcome is unknown", kr.ID, kr.HeartbeatAt.UTC().Format(time.RFC3339))
	tasks, err := k.store.FailRunningCheckerTasks(ctx, kr.ID, msg, now)
	if err != nil {
		return fmt.Errorf("failing its checker tasks: %w", err)
	}
	if err := k.store.MarkKeeperSoulsDisconnected(ctx, kr.ID); err != nil {
		return fmt.Errorf("marking its souls disconnected: %w", err)
	}
	if err := k.relay.RecoverFor(ctx, kr.ID); err != nil {
		return err
	}
	if kr.CheckerTokenID != "" {
		if err := k.store.RevokeToken(ctx, kr.CheckerTokenID, now); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("revoking its checker token: %w", err)
		}
	}
	deleted, err := k.store.DeleteKeeper(ctx, kr.ID, now.Add(-keeperDeadAfter))
	if err != nil {
		return err
	}
	if !deleted {
		k.log.Warn("a keeper declared dead wrote a heartbeat meanwhile; it registers again", "keeper_id", kr.ID)
		return nil
	}
	k.log.Warn("cleaned up after a dead keeper", "keeper_id", kr.ID, "last_heartbeat", kr.HeartbeatAt,
		"dead_for", now.Sub(kr.HeartbeatAt).Round(time.Millisecond), "runs_aborted", len(runs), "checker_tasks_failed", tasks)
	return nil
}

// unregister, at a graceful stop, deletes this keeper's row and revokes
// its Checker token: nothing is left for the leader to clean up.
func (k *Keeper) unregister(ctx context.Context) {
	kr, err := k.store.GetKeeper(ctx, k.id)
	if err != nil {
		return
	}
	if kr.CheckerTokenID != "" {
		if err := k.store.RevokeToken(ctx, kr.CheckerTokenID, time.Now()); err != nil && !errors.Is(err, domain.ErrNotFound) {
			k.log.Warn("revoking the checker's token", "err", err)
		}
	}
	if _, err := k.store.DeleteKeeper(ctx, k.id, time.Time{}); err != nil {
		k.log.Warn("deleting the keeper's row", "err", err)
	}
}

// advertise is the host:port other keepers reach this one at.
func (k *Keeper) advertise() string {
	if k.cfg.AdvertiseAddress != "" {
		return k.cfg.AdvertiseAddress
	}
	host, port, err := net.SplitHostPort(k.addr.String())
	if err != nil {
		return k.addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
					host = n.IP.String()
					break
				}
			}
		}
	}
	return net.JoinHostPort(host, port)
}

// forwardExecute launches a run-on-vip procedure on the leader keeper
// (SPEC §10.4: forwarded, not refused), through its API over TLS pinned to
// the keepers' shared CA, as this keeper's Checker.
func (k *Keeper) forwardExecute(ctx context.Context, name string, vars map[string]any) ([]store.CheckerTask, error) {
	id, err := k.leader.find(ctx)
	if err != nil {
		return nil, err
	}
	if id == k.id {
		return nil, domain.Errorf(domain.CodeUnavailable, "leadership is moving to this keeper; launch run-on-vip procedure %s again in a second", name)
	}
	kr, err := k.store.GetKeeper(ctx, id)
	if err != nil || kr.Address == "" {
		return nil, domain.Errorf(domain.CodeUnavailable, "the leader keeper %s has no address on record to forward run-on-vip procedure %s to", id, name)
	}
	tok := k.commander.token.Load()
	if tok == nil {
		return nil, domain.Errorf(domain.CodeUnavailable, "the keeper API is not serving yet")
	}
	cl, err := apiclient.New("https://"+kr.Address, *tok, apiclient.WithFingerprint(k.fp), apiclient.WithUserAgent("soulstack-keeper-forward"))
	if err != nil {
		return nil, err
	}
	resp, err := cl.ExecuteProcedure(apiclient.WithOnBehalfOf(ctx, checker.OnBehalfOf(ctx)), name, vars)
	if err != nil {
		return nil, fmt.Errorf("forwarding run-on-vip procedure %s to the leader keeper %s: %w", name, id, err)
	}
	k.log.Info("run-on-vip procedure forwarded to the leader", "procedure", name, "leader", id, "tasks", resp.TaskIDs)
	return fromWireTasks(resp.Tasks), nil
}

// fromWireTasks turns the leader's answer back into task records: the
// forwarding keeper's Checker hands them on as its own Execute would.
func fromWireTasks(ts []apitypes.CheckerTask) []store.CheckerTask {
	out := make([]store.CheckerTask, len(ts))
	for i, t := range ts {
		out[i] = store.CheckerTask{ID: t.ID, Procedure: t.Procedure, Vars: t.Vars, Status: t.Status, RunError: t.RunError,
			Message: t.Message, ParentID: t.ParentID, ScheduleID: t.ScheduleID, KeeperID: t.KeeperID,
			CreatedAt: t.CreatedAt, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
		for _, l := range t.Log {
			out[i].Log = append(out[i].Log, store.CheckerLogLine{Time: l.Time, Step: l.Step, Kind: l.Kind, Message: l.Message, Data: l.Data})
		}
	}
	return out
}

// find returns the id of the keeper holding the leader lock (PostgreSQL).
func (l *leader) find(ctx context.Context) (string, error) {
	if l.pg == nil {
		return l.id, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pc := l.pg.Copy()
	pc.RuntimeParams["application_name"] = "soulstack-keeper " + l.id
	conn, err := pgx.ConnectConfig(cctx, pc)
	if err != nil {
		return "", domain.Errorf(domain.CodeUnavailable, "finding the leader keeper: %v", err)
	}
	defer conn.Close(context.Background())
	var app string
	err = conn.QueryRow(cctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND ((l.classid::bigint << 32) | l.objid::bigint) = $1`, leaderLockKey).Scan(&app)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", domain.Errorf(domain.CodeUnavailable, "no keeper leads right now (leadership is moving); try again in a second")
	}
	if err != nil {
		return "", domain.Errorf(domain.CodeUnavailable, "finding the leader keeper: %v", err)
	}
	id, ok := strings.CutPrefix(app, leaderApp(""))
	if !ok || id == "" {
		return "", domain.Errorf(domain.CodeUnavailable, "the leader lock is held by %q, not a keeper", app)
	}
	return id, nil
}
