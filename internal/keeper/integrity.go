package keeper

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// Integrity checks of the SQLite store (issue 36): a file with corrupt
// pages deep inside answered /readyz 200, and with the wrong page the
// keeper never became leader, with one WARN line.
const (
	// DefaultIntegrityCheckTimeout bounds the check at start: a database
	// too large to check in that time is served, with a warning.
	DefaultIntegrityCheckTimeout = 60 * time.Second
	// integrityCheckInterval is how often a serving keeper checks again,
	// so a file damaged under it turns /readyz and the metric red.
	integrityCheckInterval = time.Hour
)

// integrity is the outcome of the last integrity check.
type integrity struct {
	err atomic.Pointer[error] // nil pointer: no failed check
}

func (i *integrity) set(err error) {
	if err == nil {
		i.err.Store(nil)
		return
	}
	i.err.Store(&err)
}

// failed returns the last failed check, nil when the last check passed,
// did not finish, or there is nothing to check (PostgreSQL).
func (i *integrity) failed() error {
	if p := i.err.Load(); p != nil {
		return *p
	}
	return nil
}

// CheckIntegrity runs `PRAGMA quick_check` on the SQLite store, bounded by
// the configured timeout, and records a failure for /readyz and the
// soulstack_store_integrity_ok metric. It returns the failure; a check
// that did not finish in time is not one. On PostgreSQL it does nothing.
func (k *Keeper) CheckIntegrity(ctx context.Context) error {
	err := checkIntegrity(ctx, k.cfg)
	var ie *sqlite.IntegrityError
	switch {
	case errors.As(err, &ie):
		k.integrity.set(err)
		return err
	case err != nil:
		k.log.Warn("the store's integrity check did not finish; it is tried again later", "err", err)
		return nil
	}
	k.integrity.set(nil)
	return nil
}

// checkIntegrity runs the check for cfg's store: an *sqlite.IntegrityError
// when it failed, another error when it could not finish.
func checkIntegrity(ctx context.Context, cfg Config) error {
	if cfg.Postgres() {
		return nil
	}
	timeout := cfg.IntegrityCheckTimeout
	if timeout == 0 {
		timeout = DefaultIntegrityCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := sqlite.QuickCheck(cctx, cfg.SQLitePath())
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("the integrity check of %s did not finish within %s", cfg.SQLitePath(), timeout)
	}
	return err
}

// startIntegrityCheck refuses a store that fails the check (nothing is
// written to it); a check that did not finish within its bound is logged
// and the keeper starts.
func startIntegrityCheck(ctx context.Context, cfg Config) error {
	err := checkIntegrity(ctx, cfg)
	var ie *sqlite.IntegrityError
	if errors.As(err, &ie) {
		return fmt.Errorf("%w. The keeper does not serve a damaged store: stop it, restore the database from a backup (docs/operations.md, \"Backup and restore\"), and start it again", err)
	}
	if err != nil && cfg.Logger != nil {
		cfg.Logger.Warn("the store's integrity check at start did not finish; serving without it", "err", err)
	}
	return nil
}

// integrityChecker checks the store again every integrityCheckInterval.
func (k *Keeper) integrityChecker(ctx context.Context) {
	if k.cfg.Postgres() {
		return
	}
	t := time.NewTicker(integrityCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := k.CheckIntegrity(ctx); err != nil {
			k.log.Error("the store failed its integrity check: /readyz now fails; restore the database from a backup", "err", err)
		}
	}
}

// integrityMetric is soulstack_store_integrity_ok.
func (k *Keeper) integrityMetric() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "soulstack_store_integrity_ok",
		Help: "0 when the last integrity check of the store (SQLite PRAGMA quick_check, at start and hourly) failed, else 1.",
	}, func() float64 {
		if k.integrity.failed() != nil {
			return 0
		}
		return 1
	})
}
