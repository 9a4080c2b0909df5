package api_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/api"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// takeoverStore runs between once, right after the first GetSoul: what a
// keeper writes between the accept's read and its write.
type takeoverStore struct {
	store.Store
	once    sync.Once
	between func()
}

func (s *takeoverStore) GetSoul(ctx context.Context, sid string) (store.Soul, error) {
	so, err := s.Store.GetSoul(ctx, sid)
	s.once.Do(s.between)
	return so, err
}

// A soul with a join token takes over a pending SID while an Archon
// accepts the pending record: the accept is refused and the takeover's key
// and covens stand.
func TestAcceptKeepsConcurrentTakeover(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now().UTC()
	if err := st.CreateSoul(ctx, store.Soul{SID: "web-7", PublicKey: []byte("squatter"), Status: store.SoulPending, LastSeen: now}); err != nil {
		t.Fatal(err)
	}
	holder := store.Soul{SID: "web-7", PublicKey: []byte("holder"), Status: store.SoulDisconnected, Covens: []string{"web"},
		KeeperID: "k1", LastSeen: now}
	ts := &takeoverStore{Store: st, between: func() {
		if err := st.ReplacePendingSoul(ctx, holder, []byte("squatter")); err != nil {
			t.Error(err)
		}
	}}
	for _, key := range []string{"", domain.KeyFingerprint([]byte("squatter"))} {
		ts.once = sync.Once{}
		if _, err := (api.StoreSouls{Store: ts}).AcceptSoul(ctx, "web-7", []string{"db"}, key); domain.ErrorCode(err) != domain.CodeConflict {
			t.Fatalf("accept (key %q) of a soul taken over meanwhile: %v, want a conflict", key, err)
		}
		got, err := st.GetSoul(ctx, "web-7")
		if err != nil {
			t.Fatal(err)
		}
		if string(got.PublicKey) != "holder" || !slices.Equal(got.Covens, []string{"web"}) || got.KeeperID != "k1" {
			t.Fatalf("soul after the refused accept: %+v, want the takeover's key, covens and keeper", got)
		}
		// Pending again under the squatter's key for the next round.
		if err := st.UpsertSoul(ctx, store.Soul{SID: "web-7", PublicKey: []byte("squatter"), Status: store.SoulPending, LastSeen: now}); err != nil {
			t.Fatal(err)
		}
	}
}
