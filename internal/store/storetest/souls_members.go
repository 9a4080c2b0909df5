package storetest

import (
	"fmt"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var soulMemberTests = []test{
	{"GetSouls", testGetSouls},
	{"GetSoulsChunked", testGetSoulsChunked},
	{"GetSoulsBrief", testGetSoulsBrief},
	{"CountSouls", testCountSouls},
}

func testGetSouls(t *testing.T, s store.Store) {
	ctx := t.Context()
	got, err := s.GetSouls(ctx, []string{"h1"})
	must(t, err)
	diff(t, "GetSouls on an empty store", got, []store.Soul{})

	for _, so := range []store.Soul{soul("h3", "redis"), soul("h1", "dc1", "redis"), soul("h2"), soul("H0")} {
		must(t, s.UpsertSoul(ctx, so))
	}
	must(t, s.SetSoulStatus(ctx, "h2", store.SoulPending, "", base))
	must(t, s.UpdateSoulprint(ctx, "h3", map[string]any{"up": true}, base))

	want := func(sids ...string) []store.Soul {
		t.Helper()
		out := []store.Soul{}
		for _, sid := range sids {
			so, err := s.GetSoul(ctx, sid)
			must(t, err)
			out = append(out, so)
		}
		return out
	}
	got, err = s.GetSouls(ctx, nil)
	must(t, err)
	diff(t, "GetSouls(nil)", got, []store.Soul{})
	// Unsorted, duplicated, with unknown SIDs: the known ones, sorted
	// bytewise, once each, exactly as GetSoul reads them.
	got, err = s.GetSouls(ctx, []string{"h3", "ghost", "h1", "h3", "H0", "h2"})
	must(t, err)
	diff(t, "GetSouls", got, want("H0", "h1", "h2", "h3"))
	got, err = s.GetSouls(ctx, []string{"h3"})
	must(t, err)
	diff(t, "GetSouls one", got, want("h3"))
	got, err = s.GetSouls(ctx, []string{"ghost", "h"})
	must(t, err)
	diff(t, "GetSouls unknown only", got, []store.Soul{})

	// The same souls as ListSouls.
	all, err := s.ListSouls(ctx, store.SoulFilter{})
	must(t, err)
	got, err = s.GetSouls(ctx, []string{"h2", "h1", "h3", "H0"})
	must(t, err)
	diff(t, "GetSouls vs ListSouls", got, all)
}

// testGetSoulsBrief: the same souls as GetSouls, sorted, once each, with
// SID, status and covens only (no soulprint, nothing else).
func testGetSoulsBrief(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, so := range []store.Soul{soul("h3", "redis"), soul("h1", "dc1", "redis"), soul("h2"), soul("H0")} {
		must(t, s.UpsertSoul(ctx, so))
	}
	must(t, s.SetSoulStatus(ctx, "h2", store.SoulPending, "", base))
	must(t, s.UpdateSoulprint(ctx, "h3", map[string]any{"up": true}, base))
	full, err := s.GetSouls(ctx, []string{"h3", "ghost", "h1", "h3", "H0", "h2"})
	must(t, err)
	want := []store.Soul{}
	for _, so := range full {
		if len(so.Soulprint) == 0 {
			t.Fatalf("GetSouls: %s has no soulprint to leave out", so.SID)
		}
		want = append(want, store.Soul{SID: so.SID, Status: so.Status, Covens: so.Covens})
	}
	got, err := s.GetSoulsBrief(ctx, []string{"h3", "ghost", "h1", "h3", "H0", "h2"})
	must(t, err)
	diff(t, "GetSoulsBrief", got, want)
	got, err = s.GetSoulsBrief(ctx, nil)
	must(t, err)
	diff(t, "GetSoulsBrief(nil)", got, []store.Soul{})

	// ListSouls with Brief: the same souls as without, briefly.
	for _, f := range []store.SoulFilter{{}, {Covens: []string{"redis"}}, {Status: store.SoulPending}} {
		full, err := s.ListSouls(ctx, f)
		must(t, err)
		want := []store.Soul{}
		for _, so := range full {
			want = append(want, store.Soul{SID: so.SID, Status: so.Status, Covens: so.Covens})
		}
		f.Brief = true
		got, err := s.ListSouls(ctx, f)
		must(t, err)
		diff(t, fmt.Sprintf("ListSouls(%+v)", f), got, want)
	}
}

// testGetSoulsChunked asks for more SIDs than one query binds on any
// backend (SQLite used to allow 999 variables).
func testGetSoulsChunked(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 1100
	var sids []string
	for i := n - 1; i >= 0; i-- { // descending: the result must still be sorted
		sid := fmt.Sprintf("m%04d", i)
		if i%3 == 0 {
			must(t, s.UpsertSoul(ctx, soul(sid)))
		}
		sids = append(sids, sid)
	}
	// Plus more than any parameter limit of unknown SIDs.
	for i := range 70000 {
		sids = append(sids, fmt.Sprintf("z%05d", i))
	}
	got, err := s.GetSouls(ctx, sids)
	must(t, err)
	all, err := s.ListSouls(ctx, store.SoulFilter{})
	must(t, err)
	if len(all) != (n+2)/3 {
		t.Fatalf("stored %d souls, want %d", len(all), (n+2)/3)
	}
	diff(t, "GetSouls of many", got, all)
}

func testCountSouls(t *testing.T, s store.Store) {
	ctx := t.Context()
	got, err := s.CountSouls(ctx)
	must(t, err)
	diff(t, "CountSouls on an empty store", got, map[string]int{})

	statuses := map[string]string{
		"h1": store.SoulConnected, "h2": store.SoulConnected, "h3": store.SoulPending,
		"h4": store.SoulDisconnected, "h5": store.SoulConnected, "h6": store.SoulRejected,
	}
	for sid, st := range statuses {
		so := soul(sid)
		so.Status = st
		must(t, s.UpsertSoul(ctx, so))
	}
	got, err = s.CountSouls(ctx)
	must(t, err)
	diff(t, "CountSouls", got, map[string]int{
		store.SoulConnected: 3, store.SoulPending: 1, store.SoulDisconnected: 1, store.SoulRejected: 1,
	})
	must(t, s.SetSoulStatus(ctx, "h3", store.SoulConnected, "k1", base))
	must(t, s.SetSoulStatus(ctx, "h6", store.SoulConnected, "k1", base))
	got, err = s.CountSouls(ctx)
	must(t, err)
	diff(t, "CountSouls after status changes", got, map[string]int{store.SoulConnected: 5, store.SoulDisconnected: 1})

	must(t, s.Close())
	_, err = s.CountSouls(ctx)
	wantCode(t, err, domain.CodeUnavailable)
	_, err = s.GetSouls(ctx, []string{"h1"})
	wantCode(t, err, domain.CodeUnavailable)
}
