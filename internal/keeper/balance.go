package keeper

import (
	"context"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/store"
)

// A fleet's balance (SPEC §17, keeper fleet). A keeper takes the move
// requests addressed to it (`keeper drain`, `soulctl keepers drain`, or a
// rebalancing keeper) once a heartbeat; a drain refuses new souls until
// the keeper restarts and asks every soul it holds to move, paced by the
// gateway, each soul leaving once its running work finished. A keeper
// that starts into a fleet whose souls are all held by the others (they
// moved there while it was away) asks the busiest keepers, once,
// rebalanceAfter its start, to move the souls above their fair share.
const (
	rebalanceAfter = 20 * time.Second
	// rebalanceSlack: a keeper within this fraction of its share is left
	// alone (souls moving for a few percent cost more than they give).
	rebalanceSlack = 0.1
)

// balance runs until ctx ends.
func (k *Keeper) balance(ctx context.Context) {
	start := time.Now()
	rebalanced := !k.cfg.Keeper.Rebalance || !k.relay.Enabled()
	for sleepCtx(ctx, keeperHeartbeat) {
		m, ok, err := k.store.TakeKeeperMove(ctx, k.id)
		if err != nil {
			if ctx.Err() == nil {
				k.log.Warn("reading this keeper's move requests", "err", err)
			}
			continue
		}
		if ok {
			k.move(ctx, m)
		}
		if !rebalanced && time.Since(start) >= rebalanceAfter {
			rebalanced = true
			if err := k.rebalance(ctx); err != nil && ctx.Err() == nil {
				k.log.Warn("rebalancing the fleet's souls", "err", err)
			}
		}
	}
}

// move carries out a move request.
func (k *Keeper) move(ctx context.Context, m store.KeeperMove) {
	if m.Drain {
		k.gateway.SetDraining(true)
		k.log.Info("draining: new souls are refused and every soul held here is asked to move to another keeper", "by", m.By, "souls", len(k.gateway.ConnectedSIDs()))
		k.gateway.Move(ctx, 0, "keeper "+k.id+" is being drained")
		return
	}
	if m.Souls > 0 && !k.gateway.Draining() {
		k.log.Info("asked to move souls to other keepers", "by", m.By, "souls", m.Souls)
		k.gateway.Move(ctx, m.Souls, "rebalancing: keeper "+m.By+" holds fewer than its share")
	}
}

// rebalance asks the keepers above their fair share to move the excess,
// when this one holds less than its share.
func (k *Keeper) rebalance(ctx context.Context) error {
	keepers, err := k.store.ListKeepers(ctx)
	if err != nil {
		return err
	}
	counts, err := k.store.CountSoulsByKeeper(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	total, alive := 0, 0
	for _, kr := range keepers {
		if now.Sub(kr.HeartbeatAt) < keeperDeadAfter {
			alive++
			total += counts[kr.ID]
		}
	}
	if alive < 2 || total == 0 {
		return nil
	}
	share := total / alive
	if float64(counts[k.id]) >= float64(share)*(1-rebalanceSlack) {
		return nil
	}
	for _, kr := range keepers {
		excess := counts[kr.ID] - share
		if kr.ID == k.id || now.Sub(kr.HeartbeatAt) >= keeperDeadAfter || float64(excess) <= float64(share)*rebalanceSlack {
			continue
		}
		k.log.Info("this keeper holds fewer souls than its share: asking a busier keeper to move some", "keeper_id", kr.ID, "souls", excess, "share", share, "held_here", counts[k.id])
		if err := k.store.RequestKeeperMove(ctx, store.KeeperMove{KeeperID: kr.ID, Souls: excess, By: k.id, RequestedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// DrainOptions configures Drain.
type DrainOptions struct {
	Keeper config.Keeper
	// KeeperID is the keeper to drain; "" means the one cfg describes
	// (its keeper_id, or the id kept in its data directory).
	KeeperID string
	// Wait is how long Drain waits for the keeper's souls to leave; 0
	// returns once the request is recorded.
	Wait time.Duration
	// Progress, when set, is told how many souls the keeper still holds
	// whenever that changes.
	Progress func(keeperID string, souls int)
}

// Drain asks a keeper of the database to refuse new souls and move the
// ones it holds to other keepers (`keeper drain`, run next to the keeper
// before maintenance), and waits up to opts.Wait until it holds none. It
// returns the keeper's id and how many souls it still holds (-1 when it
// did not wait).
func Drain(ctx context.Context, opts DrainOptions) (string, int, error) {
	id := opts.KeeperID
	if id == "" {
		var err error
		if id, err = keeperID(opts.Keeper); err != nil {
			return "", 0, err
		}
	}
	st, err := openStore(ctx, opts.Keeper)
	if err != nil {
		return id, 0, err
	}
	defer st.Close()
	if _, err := st.GetKeeper(ctx, id); err != nil {
		return id, 0, fmt.Errorf("keeper %s: %w", id, err)
	}
	if err := st.RequestKeeperMove(ctx, store.KeeperMove{KeeperID: id, Drain: true, By: "keeper drain", RequestedAt: time.Now()}); err != nil {
		return id, 0, err
	}
	if opts.Wait <= 0 {
		return id, -1, nil
	}
	deadline := time.Now().Add(opts.Wait)
	last := -1
	for {
		counts, err := st.CountSoulsByKeeper(ctx)
		if err != nil {
			return id, 0, err
		}
		n := counts[id]
		if n != last && opts.Progress != nil {
			opts.Progress(id, n)
		}
		last = n
		if n == 0 || time.Now().After(deadline) {
			return id, n, nil
		}
		if !sleepCtx(ctx, time.Second) {
			return id, n, ctx.Err()
		}
	}
}
