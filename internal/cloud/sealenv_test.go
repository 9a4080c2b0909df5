package cloud

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// TestN3ProviderEnvSealedAtRest reproduces audit finding N3 on both
// backends: a provider stored by an older keeper holds its API token in
// plain text. SealStoredProviders (run at keeper start) seals it, the
// stored row no longer holds the token, a replace that sends the shown
// (masked) value back keeps it, and the exec driver still gets the token.
func TestN3ProviderEnvSealedAtRest(t *testing.T) {
	backends := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "keeper.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			st, err := postgres.Open(t.Context(), pgtest.FreshDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) { testProviderEnvSealed(t, open(t)) })
	}
}

func testProviderEnvSealed(t *testing.T, st store.Store) {
	ctx := t.Context()
	const token = "hcloud-token-N3-value"
	key, err := secrets.LoadOrCreateKey(filepath.Join(t.TempDir(), secrets.KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	sec, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	legacy := store.CloudProvider{Name: "hetzner", Kind: KindExec, Config: map[string]any{
		"executable": "/usr/local/bin/prov", "env": map[string]any{"HCLOUD": token, "REGION": "fsn1"},
	}}
	if err := st.PutCloudProvider(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	if err := st.PutCloudProvider(ctx, store.CloudProvider{Name: "lab", Kind: KindLocal, Config: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	rows := func() string {
		list, err := st.ListCloudProviders(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(list)
		return string(b)
	}
	if !strings.Contains(rows(), token) {
		t.Fatal("the legacy row does not hold the token: the test does not reproduce N3")
	}

	sealed, err := SealStoredProviders(ctx, st, sec)
	if err != nil || len(sealed) != 1 || sealed[0] != "hetzner" {
		t.Fatalf("SealStoredProviders = %v, %v; want [hetzner]", sealed, err)
	}
	if got := rows(); strings.Contains(got, token) || strings.Contains(got, "fsn1") || !strings.Contains(got, secrets.SealedEnvPrefix) {
		t.Fatalf("stored providers after sealing: %s", got)
	}
	if again, err := SealStoredProviders(ctx, st, sec); err != nil || len(again) != 0 {
		t.Fatalf("a second start sealed %v again (%v)", again, err)
	}

	m := &Manager{Store: st, Env: sec}
	env := func() map[string]string {
		p, err := st.GetCloudProvider(ctx, "hetzner")
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.driver(p)
		if err != nil {
			t.Fatal(err)
		}
		return d.(execDriver).cfg.Env
	}
	if e := env(); e["HCLOUD"] != token || e["REGION"] != "fsn1" {
		t.Fatalf("driver env = %v", e)
	}

	// An admin sends the shown config back with one value changed: the
	// masked value is kept, the new one sealed.
	stored, _ := st.GetCloudProvider(ctx, "hetzner")
	shown := MaskProvider(stored)
	shown.Config["env"].(map[string]any)["REGION"] = "nbg1"
	next, err := SealProvider(shown, &stored, sec)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutCloudProvider(ctx, next); err != nil {
		t.Fatal(err)
	}
	if e := env(); e["HCLOUD"] != token || e["REGION"] != "nbg1" {
		t.Fatalf("driver env after a replace = %v", e)
	}
	if got := rows(); strings.Contains(got, token) || strings.Contains(got, "nbg1") {
		t.Fatalf("stored providers after a replace: %s", got)
	}
	// **** for a variable that has no stored value is refused.
	shown.Config["env"].(map[string]any)["NEW"] = "****"
	if _, err := SealProvider(shown, &stored, sec); err == nil || !strings.Contains(err.Error(), "env NEW") {
		t.Fatalf("**** for a new variable: %v", err)
	}
	// A sealed value copied to another provider does not open there.
	stored, _ = st.GetCloudProvider(ctx, "hetzner")
	stored.Name = "copy"
	if err := st.PutCloudProvider(ctx, stored); err != nil {
		t.Fatal(err)
	}
	cp, _ := st.GetCloudProvider(ctx, "copy")
	if _, err := m.driver(cp); err == nil {
		t.Fatal("a sealed env copied to another provider opened")
	}
}
