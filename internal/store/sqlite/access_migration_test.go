package sqlite_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// TestAccessMigrationKeepsPowers builds the database of the keeper before
// teams and grants (migrations up to 0319, Archons written as that
// version wrote them), opens it with this version (migration 0320) and
// checks that every Archon keeps exactly the powers of its role: one grant
// of that role on the whole keeper, and the authorizer allowing on any
// object exactly the permissions of the role.
func TestAccessMigrationKeepsPowers(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), sqlite.DefaultFileName)
	if err := sqlite.MigrateOnlyTo(ctx, path, 319); err != nil {
		t.Fatal(err)
	}
	old := raw(t, path)
	for _, row := range [][]any{
		{"a-root", "root", "admin", "2026-01-01T00:00:00Z", nil},
		{"a-olga", "olga", "operator", "2026-01-02T00:00:00Z", nil},
		{"a-vic", "vic", "viewer", "2026-01-03T00:00:00Z", nil},
		{"a-gone", "gone", "operator", "2026-01-04T00:00:00Z", "2026-02-01T00:00:00Z"},
	} {
		if _, err := old.ExecContext(ctx, `INSERT INTO archons (id, name, role, created_at, disabled_at) VALUES (?, ?, ?, ?, ?)`, row...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.ExecContext(ctx, `INSERT INTO secrets (name, ciphertext, owner, created_at, updated_at) VALUES ('db_pw', x'01', 'root', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`); err != nil {
		t.Fatal(err)
	}
	old.Close()

	st := open(t, path)
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := auth.Init(ctx, st, keyFile); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(ctx, st, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	objects := []auth.Object{auth.Keeper(), {Kind: auth.ObjService, Name: "db"}, {Kind: auth.ObjIncarnation, Name: "db-1"},
		{Kind: auth.ObjCoven, Name: "dbc"}, {Kind: auth.ObjRun, Name: "r1"}, {Kind: auth.ObjSoul, Name: "h1"}, {Kind: auth.ObjSecret, Name: "db_pw"}}
	for id, role := range map[string]string{"a-root": "admin", "a-olga": "operator", "a-vic": "viewer", "a-gone": "operator"} {
		gs, err := st.ArchonGrants(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) != 1 || gs[0].Role != role || gs[0].ScopeKind != store.ScopeKeeper || gs[0].SubjectKind != store.SubjectArchon || gs[0].Subject != id {
			t.Errorf("%s (%s): grants after migration %+v, want one %s grant on keeper", id, role, gs, role)
		}
		perms, _ := auth.BuiltinRole(role)
		for _, p := range auth.Permissions {
			for _, o := range objects {
				got := a.May(ctx, auth.Principal{ArchonID: id}, p.Name, o)
				if want := slices.Contains(perms, p.Name); got != want {
					t.Errorf("%s (%s) %s on %s: %v, want %v", id, role, p.Name, o, got, want)
				}
			}
		}
	}
	// A secret of before belongs to the keeper: every scenario reads it.
	sec, err := st.GetSecret(ctx, "db_pw")
	if err != nil || sec.ScopeKind != store.ScopeKeeper {
		t.Errorf("old secret's scope %q, %v", sec.ScopeKind, err)
	}
}
