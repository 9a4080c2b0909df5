package keeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
)

// checkerArchon is the identity the Checker's apicall commands run as. It
// is an operator, so a procedure (which operators may write) can never do
// more than an operator could do by hand.
const checkerArchon = "checker"

// checkerTokenSetting remembers the token issued to the Checker at the
// last start, revoked at the next one.
const checkerTokenSetting = "keeper.checker_token_id"

// leaderLease is the store lease naming the keeper that runs singleton
// duties (schedules, run-on-vip procedures).
const (
	leaderLease    = "keeper.leader"
	leaderTTL      = 30 * time.Second
	leaderInterval = 10 * time.Second
)

// selfCommander runs soulctl commands (the Checker's apicall language)
// in-process against this keeper's own API, as the checker archon. The
// client is set once the listener is up.
type selfCommander struct {
	client atomic.Pointer[apiclient.Client]
}

func (c *selfCommander) Run(ctx context.Context, argv []string) (any, error) {
	cl := c.client.Load()
	if cl == nil {
		return nil, domain.Errorf(domain.CodeUnavailable, "the keeper API is not serving yet")
	}
	return cli.Exec(ctx, cl, argv)
}

// connect points the commander at the keeper's own listener with a fresh
// token of the checker archon (revoking the previous start's token).
func (c *selfCommander) connect(ctx context.Context, a *auth.Authority, st store.Store, addr net.Addr) error {
	archon, err := ensureArchon(ctx, a, checkerArchon, auth.RoleOperator)
	if err != nil {
		return err
	}
	if old, err := st.GetSetting(ctx, checkerTokenSetting); err == nil && len(old) > 0 {
		if err := st.RevokeToken(ctx, string(old), time.Now()); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("revoking the checker's previous token: %w", err)
		}
	}
	tok, err := a.IssueToken(ctx, archon, 10*365*24*time.Hour, "Checker apicall commands (reissued at every keeper start)")
	if err != nil {
		return fmt.Errorf("issuing the checker's token: %w", err)
	}
	if err := st.PutSetting(ctx, checkerTokenSetting, []byte(tok.ID)); err != nil {
		return err
	}
	cl, err := apiclient.New("http://"+selfAddr(addr), tok.Token, apiclient.WithUserAgent("soulstack-checker"))
	if err != nil {
		return err
	}
	c.client.Store(cl)
	return nil
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

func ensureArchon(ctx context.Context, a *auth.Authority, name string, role auth.Role) (store.Archon, error) {
	all, err := a.Archons(ctx)
	if err != nil {
		return store.Archon{}, err
	}
	for _, ar := range all {
		if ar.Name == name {
			return ar, nil
		}
	}
	return a.CreateArchon(ctx, name, role)
}

// leader holds the leader lease while the keeper runs: with one keeper it
// is always the leader; with several on one PostgreSQL exactly one holds it.
type leader struct {
	st  store.Store
	id  string
	log *slog.Logger
	is  atomic.Bool
}

func (l *leader) IsLeader() bool { return l.is.Load() }

// run renews the lease until ctx ends, then releases it.
func (l *leader) run(ctx context.Context) {
	tick := time.NewTicker(leaderInterval)
	defer tick.Stop()
	for {
		ok, err := l.st.TryLease(ctx, leaderLease, l.id, leaderTTL, time.Now())
		if err != nil && ctx.Err() == nil {
			l.log.Warn("leader lease", "err", err)
			ok = false
		}
		if was := l.is.Swap(ok); was != ok {
			l.log.Info("leadership changed", "leader", ok)
		}
		select {
		case <-ctx.Done():
			l.is.Store(false)
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = l.st.ReleaseLease(rctx, leaderLease, l.id)
			cancel()
			return
		case <-tick.C:
		}
	}
}

// background runs the keeper's long-lived duties beside the HTTP server:
// the leader lease and the Checker's scheduler. stop cancels and waits.
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (k *Keeper) startBackground(ctx context.Context) *background {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b := &background{cancel: cancel}
	b.wg.Go(func() { k.leader.run(bctx) })
	sched := checker.NewScheduler(k.checker, checker.SchedulerConfig{Logger: k.log.With("component", "scheduler")})
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
