package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var secretTests = []test{
	{"Lifecycle", testSecretLifecycle},
	{"SealedState", testSealedState},
}

// testSealedState: CommitRun replaces the incarnation's sealed state keys
// with the snapshot's in the same transaction; the history row never holds
// them.
func testSealedState(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := newIncarnation(t, s, "db", "pg", "h1")
	inc, err := s.GetIncarnation(ctx, "pg")
	must(t, err)
	if inc.SealedState != nil {
		t.Fatalf("a new incarnation's sealed state: %v", inc.SealedState)
	}
	sealed := map[string]string{"password": "c2VhbGVkLTE=", "token": "c2VhbGVkLTI="}
	must(t, s.CommitRun(ctx, run.ID, map[string]any{"password": "****", "token": "****"}, store.Snapshot{SealedState: sealed}, at(time.Minute)))
	inc, err = s.GetIncarnation(ctx, "pg")
	must(t, err)
	diff(t, "sealed state", inc.SealedState, sealed)
	all, err := s.ListIncarnations(ctx)
	must(t, err)
	if len(all) != 1 {
		t.Fatalf("ListIncarnations: %+v", all)
	}
	diff(t, "listed sealed state", all[0].SealedState, sealed)
	history, err := s.ListHistory(ctx, "pg", 0)
	must(t, err)
	if len(history) != 1 || history[0].SealedState != nil {
		t.Fatalf("history: %+v", history)
	}

	must(t, s.StartRun(ctx, store.Run{ID: "r2", Incarnation: "pg", Scenario: "rotate"}))
	must(t, s.CommitRun(ctx, "r2", map[string]any{"token": "****"}, store.Snapshot{SealedState: map[string]string{"token": "c2VhbGVkLTM="}}, at(2*time.Minute)))
	inc, err = s.GetIncarnation(ctx, "pg")
	must(t, err)
	diff(t, "sealed state after the second commit", inc.SealedState, map[string]string{"token": "c2VhbGVkLTM="})
}

func testSecretLifecycle(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetSecret(ctx, "db")
	wantCode(t, err, domain.CodeNotFound)
	wantCode(t, s.DeleteSecret(ctx, "db"), domain.CodeNotFound)
	wantCode(t, s.PutSecret(ctx, store.Secret{Name: "db"}), domain.CodeInvalid)

	must(t, s.PutSecret(ctx, store.Secret{Name: "db", Ciphertext: []byte{0, 1, 2}, Owner: "alice", UpdatedAt: base}))
	must(t, s.PutSecret(ctx, store.Secret{Name: "api", Ciphertext: []byte("x"), Owner: "bob", UpdatedAt: base}))
	// Replacing keeps the owner and the creation time.
	must(t, s.PutSecret(ctx, store.Secret{Name: "db", Ciphertext: []byte{9, 9}, Owner: "bob", UpdatedAt: at(time.Hour)}))
	got, err := s.GetSecret(ctx, "db")
	must(t, err)
	if got.Owner != "alice" || !got.CreatedAt.Equal(base) || !got.UpdatedAt.Equal(at(time.Hour)) || !bytes.Equal(got.Ciphertext, []byte{9, 9}) {
		t.Fatalf("GetSecret after replace: %+v", got)
	}
	all, err := s.ListSecrets(ctx)
	must(t, err)
	if len(all) != 2 || all[0].Name != "api" || all[1].Name != "db" || all[1].Ciphertext != nil || all[0].Owner != "bob" {
		t.Fatalf("ListSecrets: %+v", all)
	}
	must(t, s.DeleteSecret(ctx, "db"))
	_, err = s.GetSecret(ctx, "db")
	wantCode(t, err, domain.CodeNotFound)
}
