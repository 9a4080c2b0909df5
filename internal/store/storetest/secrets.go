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
