// Package storetest is the conformance suite of store.Store: every backend
// runs Run from its own tests, so SQLite and PostgreSQL are held to the same
// behaviour, transactional invariants included.
package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// Opener returns a fresh, empty, migrated store for one test and arranges
// for it to be closed (and its database dropped) when the test ends.
type Opener func(t *testing.T) store.Store

type test struct {
	name string
	fn   func(t *testing.T, s store.Store)
}

// Run runs every conformance test against stores from open. Each test gets
// its own store and runs in parallel with the others.
func Run(t *testing.T, open Opener) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Auth", authTests},
		{"Souls", soulTests},
		{"SoulMembers", soulMemberTests},
		{"SoulStates", soulStateTests},
		{"Catalog", catalogTests},
		{"Runs", runTests},
		{"Checker", checkerTests},
		{"Concurrency", concurrencyTests},
		{"Relays", relayTests},
		{"Resume", resumeTests},
		{"Keepers", keeperTests},
		{"Hardening", hardeningTests},
		{"Secrets", secretTests},
		{"Pages", pageTests},
		{"Health", healthTests},
		{"Cloud", cloudTests},
		{"Retention", retentionTests},
		{"HistoryPage", historyPageTests},
		{"Rules", rulesTests},
		{"Access", accessTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, open(t))
				})
			}
		})
	}
	t.Run("Closed", func(t *testing.T) {
		t.Parallel()
		testClosed(t, open(t))
	})
}

// base is the suite's reference time: UTC, whole microseconds.
var base = time.Date(2031, 5, 17, 9, 30, 15, 123456000, time.UTC)

// at returns base plus d.
func at(d time.Duration) time.Time { return base.Add(d) }

func ptr[T any](v T) *T { return &v }

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantCode fails unless err carries the domain code want.
func wantCode(t *testing.T, err error, want domain.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", want)
	}
	if got := domain.ErrorCode(err); got != want {
		t.Fatalf("got error %q with code %s, want %s", err, got, want)
	}
}

// wantNotFound fails unless err is (wraps) domain.ErrNotFound.
func wantNotFound(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("got error %v, want one wrapping domain.ErrNotFound", err)
	}
	wantCode(t, err, domain.CodeNotFound)
}

// wantConflict fails unless err is a CodeConflict error and returns its
// Details.
func wantConflict(t *testing.T, err error) any {
	t.Helper()
	wantCode(t, err, domain.CodeConflict)
	var de *domain.Error
	errors.As(err, &de)
	return de.Details
}

// diff fails with a readable diff when got != want.
func diff(t *testing.T, what string, got, want any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func testClosed(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.Ping(ctx))
	must(t, s.Close())
	wantCode(t, s.Ping(ctx), domain.CodeUnavailable)
	_, err := s.GetSoul(ctx, "h1")
	wantCode(t, err, domain.CodeUnavailable)
	wantCode(t, s.PutSetting(ctx, "k", []byte("v")), domain.CodeUnavailable)
}
