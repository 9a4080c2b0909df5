package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// soulStateTests hold the conditional transitions of a soul's status:
// what a keeper records must never undo what an Archon decided meanwhile.
var soulStateTests = []test{
	{"MarkConnected", testSoulMarkConnected},
	{"MarkDisconnected", testSoulMarkDisconnected},
}

func testSoulMarkConnected(t *testing.T, s store.Store) {
	ctx := t.Context()
	for sid, status := range map[string]string{
		"accepted": store.SoulDisconnected, "again": store.SoulConnected,
		"pending": store.SoulPending, "rejected": store.SoulRejected,
	} {
		so := soul(sid)
		so.Status, so.KeeperID = status, ""
		must(t, s.UpsertSoul(ctx, so))
	}
	for _, sid := range []string{"accepted", "again"} {
		must(t, s.MarkSoulConnected(ctx, sid, "k2", at(time.Hour)))
		got, err := s.GetSoul(ctx, sid)
		must(t, err)
		if got.Status != store.SoulConnected || got.KeeperID != "k2" || !got.LastSeen.Equal(at(time.Hour)) {
			t.Fatalf("%s after MarkSoulConnected: %+v", sid, got)
		}
	}
	// Pending or rejected: refused, nothing written.
	for _, sid := range []string{"pending", "rejected"} {
		want, err := s.GetSoul(ctx, sid)
		must(t, err)
		wantConflict(t, s.MarkSoulConnected(ctx, sid, "k2", at(time.Hour)))
		got, err := s.GetSoul(ctx, sid)
		must(t, err)
		diff(t, sid+" after a refused MarkSoulConnected", got, want)
	}
	wantNotFound(t, s.MarkSoulConnected(ctx, "ghost", "k2", base))
}

func testSoulMarkDisconnected(t *testing.T, s store.Store) {
	ctx := t.Context()
	for sid, status := range map[string]string{
		"mine": store.SoulConnected, "theirs": store.SoulConnected, "rejected": store.SoulRejected,
	} {
		so := soul(sid)
		so.Status = status
		if sid == "theirs" {
			so.KeeperID = "k2"
		}
		must(t, s.UpsertSoul(ctx, so))
	}
	must(t, s.MarkSoulDisconnected(ctx, "mine", "k1", at(time.Hour)))
	got, err := s.GetSoul(ctx, "mine")
	must(t, err)
	if got.Status != store.SoulDisconnected || got.KeeperID != "k1" || !got.LastSeen.Equal(at(time.Hour)) {
		t.Fatalf("after MarkSoulDisconnected: %+v", got)
	}
	// Rejected meanwhile, or connected to another keeper now: untouched.
	for _, sid := range []string{"theirs", "rejected"} {
		want, err := s.GetSoul(ctx, sid)
		must(t, err)
		must(t, s.MarkSoulDisconnected(ctx, sid, "k1", at(time.Hour)))
		got, err := s.GetSoul(ctx, sid)
		must(t, err)
		diff(t, sid+" after MarkSoulDisconnected by k1", got, want)
	}
	must(t, s.MarkSoulDisconnected(ctx, "ghost", "k1", base))
}
