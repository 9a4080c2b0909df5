package keeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/version"
)

// checkerArchon is the identity the Checker's apicall commands run as. It
// is an operator, so a procedure (which operators may write) can never do
// more than an operator could do by hand.
const checkerArchon = "checker"

// legacyCheckerTokenSetting is where keepers before per-keeper Checker
// tokens kept the one token they all shared (each start revoked the
// others'); a keeper revokes that token once and clears the setting.
const legacyCheckerTokenSetting = "keeper.checker_token_id"

// selfCommander runs soulctl commands (the Checker's apicall language)
// in-process against this keeper's own API, as the checker archon with
// this keeper's own token. The client is set once the listener is up.
type selfCommander struct {
	client atomic.Pointer[apiclient.Client]
	token  atomic.Pointer[string] // the token's JWT, for forwarding to the leader
}

func (c *selfCommander) Run(ctx context.Context, argv []string) (any, error) {
	cl := c.client.Load()
	if cl == nil {
		return nil, domain.Errorf(domain.CodeUnavailable, "the keeper API is not serving yet")
	}
	// The task's calls act for its owner (audit M4): the API authorizes
	// and audits them under that Archon.
	return cli.Exec(apiclient.WithOnBehalfOf(ctx, checker.OnBehalfOf(ctx)), cl, argv)
}

// register gives this keeper's Checker a fresh token of the checker
// archon, revoking only the token this keeper's previous process had (one
// keeper's start never revokes another's, SPEC §10.4), points the
// commander at the keeper's own listener, and writes the keeper's row
// (address, token, heartbeat).
func (k *Keeper) register(ctx context.Context) error {
	archon, err := ensureArchon(ctx, k.auth, checkerArchon, auth.RoleOperator)
	if err != nil {
		return err
	}
	if prev, err := k.store.GetKeeper(ctx, k.id); err == nil && prev.CheckerTokenID != "" {
		if err := k.store.RevokeToken(ctx, prev.CheckerTokenID, time.Now()); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("revoking the checker's previous token: %w", err)
		}
	} else if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	if old, err := k.store.GetSetting(ctx, legacyCheckerTokenSetting); err == nil && len(old) > 0 {
		if err := k.store.RevokeToken(ctx, string(old), time.Now()); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("revoking the shared checker token of older keepers: %w", err)
		}
		if err := k.store.PutSetting(ctx, legacyCheckerTokenSetting, nil); err != nil {
			return err
		}
	}
	tok, err := k.auth.IssueToken(ctx, archon, 10*365*24*time.Hour, "Checker apicall commands of keeper "+k.id+" (reissued at its every start)")
	if err != nil {
		return fmt.Errorf("issuing the checker's token: %w", err)
	}
	scheme := "http://"
	tlsOpts := k.selfTLS()
	if len(tlsOpts) > 0 {
		scheme = "https://"
	}
	cl, err := apiclient.New(scheme+selfAddr(k.addr), tok.Token, append(tlsOpts, apiclient.WithUserAgent("soulstack-checker"))...)
	if err != nil {
		return err
	}
	k.commander.client.Store(cl)
	k.commander.token.Store(&tok.Token)
	now := time.Now()
	return k.store.RegisterKeeper(ctx, store.KeeperRecord{
		ID: k.id, Address: k.advertise(), Version: version.Version(), CheckerTokenID: tok.ID, StartedAt: now, HeartbeatAt: now,
	})
}

// selfAddr is how this process reaches its own listener: the bound address,
// with a wildcard host replaced by loopback.
func selfAddr(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// ensureArchon returns the Archon called name, creating it if needed.
// Keepers starting together on one database may both try to create it:
// the one that loses reads the winner's.
func ensureArchon(ctx context.Context, a *auth.Authority, name string, role auth.Role) (store.Archon, error) {
	find := func() (store.Archon, bool, error) {
		all, err := a.Archons(ctx)
		if err != nil {
			return store.Archon{}, false, err
		}
		for _, ar := range all {
			if ar.Name == name {
				return ar, true, nil
			}
		}
		return store.Archon{}, false, nil
	}
	if ar, ok, err := find(); err != nil || ok {
		return ar, err
	}
	ar, err := a.CreateArchon(ctx, name, role)
	if domain.ErrorCode(err) == domain.CodeConflict {
		if found, ok, ferr := find(); ferr == nil && ok {
			return found, nil
		}
	}
	return ar, err
}

// background runs the keeper's long-lived duties beside the HTTP server:
// leadership, the keeper's heartbeat, the cleanup after dead keepers and
// the Checker's scheduler and the drift schedules. stop cancels and waits.
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (k *Keeper) startBackground(ctx context.Context) *background {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b := &background{cancel: cancel}
	wake := make(chan struct{}, 1)
	reap := make(chan struct{}, 1)
	b.wg.Go(func() {
		k.leader.run(bctx, func() {
			for _, c := range []chan struct{}{wake, reap} {
				select {
				case c <- struct{}{}:
				default:
				}
			}
		})
	})
	b.wg.Go(func() { k.heartbeat(bctx) })
	b.wg.Go(func() { k.balance(bctx) })
	b.wg.Go(func() { k.health.Run(bctx) })
	b.wg.Go(func() { k.reaper(bctx, reap) })
	b.wg.Go(func() { k.pruner(bctx) })
	b.wg.Go(func() { k.integrityChecker(bctx) })
	b.wg.Go(func() { k.engine.RunDriftSchedules(bctx, k.leader.IsLeader, 0) })
	b.wg.Go(func() { k.rules.Run(bctx) })
	b.wg.Go(func() { k.notifier.Run(bctx) })
	sched := checker.NewScheduler(k.checker, checker.SchedulerConfig{Logger: k.log.With("component", "scheduler"), Wake: wake, OnMissed: k.scheduleMissed})
	b.wg.Go(func() {
		if err := sched.Run(bctx); err != nil && bctx.Err() == nil {
			k.log.Error("checker scheduler stopped", "err", err)
		}
	})
	return b
}

func (b *background) stop() {
	b.cancel()
	b.wg.Wait()
}

// guardSecretInputs is the Checker's InputGuard: an `incarnation run` or
// `incarnation create` apicall may pass a procedure's secret only into
// scenario inputs declared secret: true (audit L10).
func (k *Keeper) guardSecretInputs(ctx context.Context, argv []string, secrets []string) error {
	ri, ok := cli.ParseRunInput(argv)
	if !ok {
		return nil
	}
	return k.engine.CheckSecretInputs(ctx, ri.Incarnation, ri.Service, ri.Scenario, ri.Input, secrets)
}
