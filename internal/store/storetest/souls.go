package storetest

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var soulTests = []test{
	{"UpsertAndGet", testSoulUpsert},
	{"CreateIsInsertOnly", testSoulCreate},
	{"SetVersion", testSoulSetVersion},
	{"ReplacePending", testSoulReplacePending},
	{"ListFilters", testSoulFilters},
	{"StatusAndFacts", testSoulStatus},
	{"JoinTokens", testJoinTokens},
	{"JoinTokenLimitsAndRevocation", testJoinTokenLimits},
}

func soul(sid string, covens ...string) store.Soul {
	return store.Soul{
		SID:       sid,
		PublicKey: []byte("key-" + sid),
		Status:    store.SoulConnected,
		Covens:    covens,
		Soulprint: map[string]any{
			"os":      map[string]any{"family": "debian", "arch": "amd64"},
			"sid":     sid,
			"cpus":    float64(4),
			"network": map[string]any{"primary_ip": "10.0.0.1"},
		},
		Version:   "1.0.0",
		KeeperID:  "k1",
		LastSeen:  at(time.Minute),
		CreatedAt: base,
	}
}

func testSoulUpsert(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetSoul(ctx, "h1")
	wantNotFound(t, err)

	h1 := soul("h1", "redis", "dc1", "redis") // duplicates and order are normalized
	must(t, s.UpsertSoul(ctx, h1))
	got, err := s.GetSoul(ctx, "h1")
	must(t, err)
	h1.Covens = []string{"dc1", "redis"}
	diff(t, "GetSoul", got, h1)

	// Upsert replaces everything but CreatedAt.
	h1b := store.Soul{SID: "h1", PublicKey: []byte("new"), Status: store.SoulPending, Covens: nil,
		Soulprint: nil, LastSeen: at(time.Hour), CreatedAt: at(time.Hour)}
	must(t, s.UpsertSoul(ctx, h1b))
	got, err = s.GetSoul(ctx, "h1")
	must(t, err)
	want := h1b
	want.Covens, want.Soulprint, want.CreatedAt = []string{}, map[string]any{}, base
	diff(t, "GetSoul after upsert", got, want)
}

func testSoulCreate(t *testing.T, s store.Store) {
	ctx := t.Context()
	h1 := soul("h1", "redis", "dc1", "redis")
	h1.Status = store.SoulPending
	must(t, s.CreateSoul(ctx, h1))
	got, err := s.GetSoul(ctx, "h1")
	must(t, err)
	h1.Covens = []string{"dc1", "redis"}
	diff(t, "GetSoul after CreateSoul", got, h1)
	sids, err := s.ListSouls(ctx, store.SoulFilter{Covens: []string{"dc1"}})
	must(t, err)
	if len(sids) != 1 || sids[0].SID != "h1" {
		t.Fatalf("coven filter after CreateSoul: %+v", sids)
	}

	// A second registration of the SID changes nothing: not the key, not
	// the status an Archon may have set meanwhile, not the covens.
	must(t, s.SetSoulStatus(ctx, "h1", store.SoulRejected, "", at(time.Hour)))
	other := soul("h1", "web")
	other.PublicKey = []byte("another key")
	wantConflict(t, s.CreateSoul(ctx, other))
	got, err = s.GetSoul(ctx, "h1")
	must(t, err)
	want := h1
	want.Status, want.KeeperID, want.LastSeen = store.SoulRejected, "", at(time.Hour)
	diff(t, "GetSoul after a refused CreateSoul", got, want)
	web, err := s.ListSouls(ctx, store.SoulFilter{Covens: []string{"web"}})
	must(t, err)
	diff(t, "coven web after a refused CreateSoul", len(web), 0)

	// Nil covens and soulprint read back empty; a zero CreatedAt is now.
	before := time.Now().Add(-time.Second)
	must(t, s.CreateSoul(ctx, store.Soul{SID: "h2", PublicKey: []byte("k2"), Status: store.SoulPending, LastSeen: base}))
	got, err = s.GetSoul(ctx, "h2")
	must(t, err)
	if got.Covens == nil || got.Soulprint == nil || got.CreatedAt.Before(before) {
		t.Fatalf("CreateSoul with zero values: %+v", got)
	}
}

func testSoulSetVersion(t *testing.T, s store.Store) {
	ctx := t.Context()
	h1 := soul("h1", "redis")
	must(t, s.UpsertSoul(ctx, h1))
	must(t, s.SetSoulStatus(ctx, "h1", store.SoulRejected, "", at(time.Hour)))
	must(t, s.SetSoulVersion(ctx, "h1", "2.0.0"))
	got, err := s.GetSoul(ctx, "h1")
	must(t, err)
	want := h1
	want.Version, want.Status, want.KeeperID, want.LastSeen = "2.0.0", store.SoulRejected, "", at(time.Hour)
	diff(t, "GetSoul after SetSoulVersion", got, want)
	wantNotFound(t, s.SetSoulVersion(ctx, "ghost", "1.0.0"))
}

func testSoulReplacePending(t *testing.T, s store.Store) {
	ctx := t.Context()
	squat := soul("h1")
	squat.Status, squat.Covens, squat.PublicKey = store.SoulPending, []string{}, []byte("squatter")
	must(t, s.CreateSoul(ctx, squat))

	// Under another key than the pending one: refused, nothing written.
	holder := soul("h1", "web", "dc1")
	holder.Status, holder.PublicKey, holder.CreatedAt = store.SoulDisconnected, []byte("holder"), at(time.Hour)
	wantConflict(t, s.ReplacePendingSoul(ctx, holder, []byte("someone else")))
	got, err := s.GetSoul(ctx, "h1")
	must(t, err)
	diff(t, "soul after a refused replace", got, squat)

	must(t, s.ReplacePendingSoul(ctx, holder, []byte("squatter")))
	got, err = s.GetSoul(ctx, "h1")
	must(t, err)
	want := holder
	want.Covens, want.CreatedAt = []string{"dc1", "web"}, base
	diff(t, "replaced soul", got, want)
	web, err := s.ListSouls(ctx, store.SoulFilter{Covens: []string{"web"}})
	must(t, err)
	diff(t, "coven web after replace", len(web), 1)

	// No longer pending (replaced, or decided by an Archon): refused.
	again := holder
	again.PublicKey = []byte("third")
	wantConflict(t, s.ReplacePendingSoul(ctx, again, []byte("holder")))
	wantConflict(t, s.ReplacePendingSoul(ctx, again, []byte("squatter")))
	wantNotFound(t, s.ReplacePendingSoul(ctx, soul("ghost"), []byte("k")))
}

func testSoulFilters(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, so := range []store.Soul{
		soul("h3", "redis", "dc2"),
		soul("h1", "redis", "dc1"),
		soul("h2", "postgres", "dc1"),
		soul("H0"), // bytewise order: upper case first
	} {
		must(t, s.UpsertSoul(ctx, so))
	}
	must(t, s.SetSoulStatus(ctx, "h2", store.SoulPending, "", base))

	sids := func(f store.SoulFilter) []string {
		t.Helper()
		list, err := s.ListSouls(ctx, f)
		must(t, err)
		out := []string{}
		for _, so := range list {
			out = append(out, so.SID)
		}
		return out
	}
	diff(t, "all souls", sids(store.SoulFilter{}), []string{"H0", "h1", "h2", "h3"})
	diff(t, "pending", sids(store.SoulFilter{Status: store.SoulPending}), []string{"h2"})
	diff(t, "coven redis", sids(store.SoulFilter{Covens: []string{"redis"}}), []string{"h1", "h3"})
	diff(t, "covens redis+dc1", sids(store.SoulFilter{Covens: []string{"redis", "dc1"}}), []string{"h1"})
	diff(t, "covens with a duplicate", sids(store.SoulFilter{Covens: []string{"dc1", "dc1"}}), []string{"h1", "h2"})
	diff(t, "connected in dc1", sids(store.SoulFilter{Status: store.SoulConnected, Covens: []string{"dc1"}}), []string{"h1"})
	diff(t, "unknown coven", sids(store.SoulFilter{Covens: []string{"nope"}}), []string{})

	// Coven changes are reflected by the filter.
	must(t, s.SetSoulCovens(ctx, "h1", []string{"postgres"}))
	diff(t, "redis after change", sids(store.SoulFilter{Covens: []string{"redis"}}), []string{"h3"})
	diff(t, "postgres after change", sids(store.SoulFilter{Covens: []string{"postgres"}}), []string{"h1", "h2"})
	got, err := s.GetSoul(ctx, "h1")
	must(t, err)
	diff(t, "covens", got.Covens, []string{"postgres"})
	wantNotFound(t, s.SetSoulCovens(ctx, "ghost", []string{"x"}))
}

func testSoulStatus(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.UpsertSoul(ctx, soul("h1")))
	must(t, s.UpsertSoul(ctx, soul("h2")))
	h3 := soul("h3")
	h3.KeeperID = "k2"
	must(t, s.UpsertSoul(ctx, h3))
	h4 := soul("h4")
	h4.Status = store.SoulPending
	must(t, s.UpsertSoul(ctx, h4))

	must(t, s.SetSoulStatus(ctx, "h2", store.SoulConnected, "k2", at(time.Hour)))
	got, err := s.GetSoul(ctx, "h2")
	must(t, err)
	if got.Status != store.SoulConnected || got.KeeperID != "k2" || !got.LastSeen.Equal(at(time.Hour)) {
		t.Fatalf("after SetSoulStatus: %+v", got)
	}
	wantNotFound(t, s.SetSoulStatus(ctx, "ghost", store.SoulConnected, "k1", base))

	facts := map[string]any{"os": map[string]any{"family": "redhat"}, "covens": []any{"a", "b"}, "up": true}
	must(t, s.UpdateSoulprint(ctx, "h1", facts, at(2*time.Hour)))
	got, err = s.GetSoul(ctx, "h1")
	must(t, err)
	diff(t, "soulprint", got.Soulprint, facts)
	if !got.LastSeen.Equal(at(2 * time.Hour)) {
		t.Fatalf("UpdateSoulprint did not touch LastSeen: %v", got.LastSeen)
	}
	wantNotFound(t, s.UpdateSoulprint(ctx, "ghost", facts, base))

	must(t, s.TouchSoul(ctx, "h1", at(3*time.Hour)))
	got, err = s.GetSoul(ctx, "h1")
	must(t, err)
	if !got.LastSeen.Equal(at(3 * time.Hour)) {
		t.Fatalf("TouchSoul: LastSeen = %v", got.LastSeen)
	}
	wantNotFound(t, s.TouchSoul(ctx, "ghost", base))
	// Many at once; an unknown SID is skipped, not an error.
	must(t, s.TouchSouls(ctx, map[string]time.Time{"h1": at(4 * time.Hour), "ghost": base}))
	got, err = s.GetSoul(ctx, "h1")
	must(t, err)
	if !got.LastSeen.Equal(at(4 * time.Hour)) {
		t.Fatalf("TouchSouls: LastSeen = %v", got.LastSeen)
	}
	must(t, s.TouchSouls(ctx, nil))
	// Many marked disconnected at once: only those connected to that
	// keeper; an unknown SID is skipped.
	must(t, s.SetSoulStatus(ctx, "h1", store.SoulConnected, "k9", at(4*time.Hour)))
	must(t, s.MarkSoulsDisconnected(ctx, "k9", map[string]time.Time{"h1": at(5 * time.Hour), "ghost": base}))
	got, err = s.GetSoul(ctx, "h1")
	must(t, err)
	if got.Status != store.SoulDisconnected || got.KeeperID != "k9" || !got.LastSeen.Equal(at(5*time.Hour)) {
		t.Fatalf("MarkSoulsDisconnected: %s %q %v", got.Status, got.KeeperID, got.LastSeen)
	}
	must(t, s.SetSoulStatus(ctx, "h1", store.SoulConnected, "k1", at(4*time.Hour)))
	must(t, s.MarkSoulsDisconnected(ctx, "k9", map[string]time.Time{"h1": at(6 * time.Hour)}))
	if got, _ = s.GetSoul(ctx, "h1"); got.Status != store.SoulConnected || got.KeeperID != "k1" {
		t.Fatalf("MarkSoulsDisconnected of another keeper's soul: %s %q", got.Status, got.KeeperID)
	}

	// Keeper k1 restarts: only its connected souls (h1) become disconnected.
	must(t, s.MarkKeeperSoulsDisconnected(ctx, "k1"))
	want := map[string][2]string{
		"h1": {store.SoulDisconnected, ""},
		"h2": {store.SoulConnected, "k2"},
		"h3": {store.SoulConnected, "k2"},
		"h4": {store.SoulPending, "k1"},
	}
	for sid, w := range want {
		got, err := s.GetSoul(ctx, sid)
		must(t, err)
		if got.Status != w[0] || got.KeeperID != w[1] {
			t.Errorf("%s: status %s keeper %q, want %s %q", sid, got.Status, got.KeeperID, w[0], w[1])
		}
	}
}

func testJoinTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	secret := sha256.Sum256([]byte("secret"))
	jt := store.JoinToken{ID: "j1", SecretHash: secret[:], Covens: []string{"redis", "dc1"},
		ExpiresAt: at(time.Hour), CreatedBy: "a1", CreatedAt: base}
	must(t, s.CreateJoinToken(ctx, jt))
	wantConflict(t, s.CreateJoinToken(ctx, jt))

	peek, err := s.PeekJoinToken(ctx, secret[:], at(time.Minute))
	must(t, err)
	if peek.ID != "j1" || peek.Uses != 0 || len(peek.Covens) != 2 {
		t.Fatalf("PeekJoinToken = %+v", peek)
	}
	got, err := s.UseJoinToken(ctx, secret[:], at(time.Minute))
	must(t, err)
	jt.Covens, jt.Uses = []string{"dc1", "redis"}, 1
	diff(t, "UseJoinToken", got, jt) // SecretHash included: the peek counted no use
	got, err = s.UseJoinToken(ctx, secret[:], at(59*time.Minute))
	must(t, err)
	if got.Uses != 2 {
		t.Fatalf("second use: Uses = %d", got.Uses)
	}

	// Expired: exactly at ExpiresAt and after; the error says so.
	_, err = s.PeekJoinToken(ctx, secret[:], at(time.Hour))
	wantRefusal(t, err, "expired")
	_, err = s.UseJoinToken(ctx, secret[:], at(time.Hour))
	wantRefusal(t, err, "expired")
	_, err = s.UseJoinToken(ctx, secret[:], at(2*time.Hour))
	wantRefusal(t, err, "expired")
	other := sha256.Sum256([]byte("other"))
	_, err = s.UseJoinToken(ctx, other[:], base)
	wantRefusal(t, err, "unknown")
	_, err = s.PeekJoinToken(ctx, other[:], base)
	wantRefusal(t, err, "unknown")
}

func testJoinTokenLimits(t *testing.T, s store.Store) {
	ctx := t.Context()
	list, err := s.ListJoinTokens(ctx)
	must(t, err)
	diff(t, "ListJoinTokens on an empty store", list, []store.JoinToken{})

	once := sha256.Sum256([]byte("once"))
	twice := sha256.Sum256([]byte("twice"))
	open := sha256.Sum256([]byte("open"))
	j1 := store.JoinToken{ID: "j1", SecretHash: once[:], Covens: []string{"web"}, ExpiresAt: at(time.Hour), CreatedBy: "a1", CreatedAt: base, MaxUses: 1}
	j2 := store.JoinToken{ID: "j2", SecretHash: twice[:], Covens: []string{}, ExpiresAt: at(time.Hour), CreatedBy: "a1", CreatedAt: at(time.Second), MaxUses: 2}
	j3 := store.JoinToken{ID: "j3", SecretHash: open[:], Covens: []string{"db"}, ExpiresAt: at(time.Hour), CreatedBy: "a2", CreatedAt: at(2 * time.Second)}
	for _, jt := range []store.JoinToken{j2, j1, j3} {
		must(t, s.CreateJoinToken(ctx, jt))
	}
	neg := sha256.Sum256([]byte("negative"))
	wantCode(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "j4", SecretHash: neg[:], ExpiresAt: at(time.Hour), MaxUses: -1}), domain.CodeInvalid)

	// A use limit: the use that reaches it succeeds, the next is refused
	// and not counted.
	got, err := s.UseJoinToken(ctx, once[:], at(time.Minute))
	must(t, err)
	if got.Uses != 1 || got.MaxUses != 1 {
		t.Fatalf("first use of a one-use token: %+v", got)
	}
	_, err = s.UseJoinToken(ctx, once[:], at(time.Minute))
	wantRefusal(t, err, "used up (1 of 1 uses)")
	_, err = s.PeekJoinToken(ctx, once[:], at(time.Minute))
	wantRefusal(t, err, "used up")
	for range 2 {
		_, err = s.UseJoinToken(ctx, twice[:], at(time.Minute))
		must(t, err)
	}
	_, err = s.UseJoinToken(ctx, twice[:], at(time.Minute))
	wantNotFound(t, err)

	// Revocation: refused at once, however many uses are left; the first
	// revocation time stays.
	_, err = s.UseJoinToken(ctx, open[:], at(time.Minute))
	must(t, err)
	must(t, s.RevokeJoinToken(ctx, "j3", at(2*time.Minute)))
	must(t, s.RevokeJoinToken(ctx, "j3", at(3*time.Minute)))
	_, err = s.UseJoinToken(ctx, open[:], at(4*time.Minute))
	wantRefusal(t, err, "revoked")
	_, err = s.PeekJoinToken(ctx, open[:], at(4*time.Minute))
	wantRefusal(t, err, "revoked")
	wantNotFound(t, s.RevokeJoinToken(ctx, "ghost", base))

	// The list: oldest first, uses and revocation included, no secrets.
	list, err = s.ListJoinTokens(ctx)
	must(t, err)
	j1.Uses, j2.Uses, j3.Uses = 1, 2, 1
	j3.RevokedAt = ptr(at(2 * time.Minute))
	j1.SecretHash, j2.SecretHash, j3.SecretHash = nil, nil, nil
	diff(t, "ListJoinTokens", list, []store.JoinToken{j1, j2, j3})
}

// wantRefusal fails unless err is a not-found refusal of a join token
// whose message says why (want).
func wantRefusal(t *testing.T, err error, want string) {
	t.Helper()
	wantNotFound(t, err)
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("join token refused with %q, want it to say %q", err, want)
	}
}
