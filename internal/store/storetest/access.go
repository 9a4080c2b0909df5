package storetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/store"
)

var accessTests = []test{
	{"ArchonRoleIsKeeperGrant", testArchonRoleGrant},
	{"Teams", testTeams},
	{"Grants", testGrants},
	{"Roles", testAccessRoles},
	{"SecretScope", testSecretScope},
}

// An Archon created with a role holds that role on the whole keeper as a
// grant; one created with role none holds nothing.
func testArchonRoleGrant(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}))
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a2", Name: "dana", Role: store.RoleNone, CreatedAt: base}))
	gs, err := s.ArchonGrants(ctx, "a1")
	must(t, err)
	want := []store.Grant{{ID: "archon-role-a1", SubjectKind: store.SubjectArchon, Subject: "a1", Role: store.RoleAdmin, ScopeKind: store.ScopeKeeper, CreatedAt: base}}
	if d := cmp.Diff(want, gs); d != "" {
		t.Fatalf("grants of an admin (-want +got):\n%s", d)
	}
	gs, err = s.ArchonGrants(ctx, "a2")
	must(t, err)
	if len(gs) != 0 {
		t.Fatalf("grants of a role-less archon: %+v", gs)
	}
	// The archon and its grant are one write: a taken name leaves no grant.
	wantConflict(t, s.CreateArchon(ctx, store.Archon{ID: "a3", Name: "root", Role: store.RoleViewer}))
	gs, err = s.ArchonGrants(ctx, "a3")
	must(t, err)
	if len(gs) != 0 {
		t.Fatalf("a refused archon left grants: %+v", gs)
	}
}

func testTeams(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "dana", Role: store.RoleNone, CreatedAt: base}))
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a2", Name: "eve", Role: store.RoleNone, CreatedAt: base}))
	must(t, s.CreateTeam(ctx, store.Team{Name: "db", Description: "database team", CreatedAt: base}))
	must(t, s.CreateTeam(ctx, store.Team{Name: "web", CreatedAt: base}))
	wantConflict(t, s.CreateTeam(ctx, store.Team{Name: "db"}))
	must(t, s.AddTeamMember(ctx, "db", "a2"))
	must(t, s.AddTeamMember(ctx, "db", "a1"))
	must(t, s.AddTeamMember(ctx, "db", "a1")) // twice is no error
	must(t, s.AddTeamMember(ctx, "web", "a1"))
	wantNotFound(t, s.AddTeamMember(ctx, "nope", "a1"))
	wantNotFound(t, s.AddTeamMember(ctx, "db", "nobody"))
	tm, err := s.GetTeam(ctx, "db")
	must(t, err)
	if d := cmp.Diff(store.Team{Name: "db", Description: "database team", Members: []string{"a1", "a2"}, CreatedAt: base}, tm); d != "" {
		t.Fatalf("team (-want +got):\n%s", d)
	}
	teams, err := s.ArchonTeams(ctx, "a1")
	must(t, err)
	if d := cmp.Diff([]string{"db", "web"}, teams); d != "" {
		t.Fatalf("teams of a1 (-want +got):\n%s", d)
	}
	all, err := s.ListTeams(ctx)
	must(t, err)
	if len(all) != 2 || all[0].Name != "db" || len(all[0].Members) != 2 || len(all[1].Members) != 1 {
		t.Fatalf("teams = %+v", all)
	}
	must(t, s.RemoveTeamMember(ctx, "db", "a2"))
	wantNotFound(t, s.RemoveTeamMember(ctx, "db", "a2"))
	// Deleting a team deletes its grants and memberships.
	must(t, s.CreateGrant(ctx, store.Grant{ID: "g1", SubjectKind: store.SubjectTeam, Subject: "db", Role: store.RoleOperator, ScopeKind: store.ScopeService, Scope: "postgres", CreatedAt: base}))
	must(t, s.DeleteTeam(ctx, "db"))
	wantNotFound(t, s.DeleteTeam(ctx, "db"))
	_, err = s.GetTeam(ctx, "db")
	wantNotFound(t, err)
	_, err = s.GetGrant(ctx, "g1")
	wantNotFound(t, err)
	teams, err = s.ArchonTeams(ctx, "a1")
	must(t, err)
	if d := cmp.Diff([]string{"web"}, teams); d != "" {
		t.Fatalf("teams after delete (-want +got):\n%s", d)
	}
}

func testGrants(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "dana", Role: store.RoleNone, CreatedAt: base}))
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a2", Name: "eve", Role: store.RoleNone, CreatedAt: base}))
	must(t, s.CreateTeam(ctx, store.Team{Name: "db", CreatedAt: base}))
	must(t, s.AddTeamMember(ctx, "db", "a1"))
	own := store.Grant{ID: "g1", SubjectKind: store.SubjectArchon, Subject: "a1", Role: store.RoleViewer, ScopeKind: store.ScopeKeeper, CreatedBy: "root", CreatedAt: base}
	team := store.Grant{ID: "g2", SubjectKind: store.SubjectTeam, Subject: "db", Role: store.RoleOperator, ScopeKind: store.ScopeService, Scope: "postgres", CreatedAt: base}
	other := store.Grant{ID: "g3", SubjectKind: store.SubjectArchon, Subject: "a2", Role: store.RoleOperator, ScopeKind: store.ScopeIncarnation, Scope: "web-1", CreatedAt: base}
	for _, g := range []store.Grant{own, team, other} {
		must(t, s.CreateGrant(ctx, g))
	}
	dup := team
	dup.ID = "g4"
	wantConflict(t, s.CreateGrant(ctx, dup))
	gs, err := s.ArchonGrants(ctx, "a1")
	must(t, err)
	if d := cmp.Diff([]store.Grant{own, team}, gs); d != "" {
		t.Fatalf("grants of a1, own and its team's (-want +got):\n%s", d)
	}
	gs, err = s.ListGrants(ctx, store.GrantFilter{Role: store.RoleOperator})
	must(t, err)
	if d := cmp.Diff([]store.Grant{other, team}, gs); d != "" {
		t.Fatalf("operator grants (-want +got):\n%s", d)
	}
	must(t, s.DeleteGrant(ctx, "g2"))
	wantNotFound(t, s.DeleteGrant(ctx, "g2"))
	// Leaving the team takes its grants away.
	must(t, s.CreateGrant(ctx, team))
	must(t, s.RemoveTeamMember(ctx, "db", "a1"))
	gs, err = s.ArchonGrants(ctx, "a1")
	must(t, err)
	if d := cmp.Diff([]store.Grant{own}, gs); d != "" {
		t.Fatalf("grants after leaving the team (-want +got):\n%s", d)
	}
}

func testAccessRoles(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.PutAccessRole(ctx, store.AccessRole{Name: "oncall", Permissions: []string{"unlock", "read", "unlock"}, Description: "night", CreatedAt: base}))
	r, err := s.GetAccessRole(ctx, "oncall")
	must(t, err)
	if d := cmp.Diff([]string{"read", "unlock"}, r.Permissions); d != "" || r.Description != "night" {
		t.Fatalf("role = %+v (-want +got perms):\n%s", r, d)
	}
	must(t, s.PutAccessRole(ctx, store.AccessRole{Name: "oncall", Permissions: []string{"cancel"}}))
	rs, err := s.ListAccessRoles(ctx)
	must(t, err)
	if len(rs) != 1 || !cmp.Equal(rs[0].Permissions, []string{"cancel"}) || !rs[0].CreatedAt.Equal(base) {
		t.Fatalf("roles = %+v", rs)
	}
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "dana", Role: store.RoleNone, CreatedAt: base}))
	must(t, s.CreateGrant(ctx, store.Grant{ID: "g1", SubjectKind: store.SubjectArchon, Subject: "a1", Role: "oncall", ScopeKind: store.ScopeKeeper, CreatedAt: base}))
	wantConflict(t, s.DeleteAccessRole(ctx, "oncall"))
	must(t, s.DeleteGrant(ctx, "g1"))
	must(t, s.DeleteAccessRole(ctx, "oncall"))
	wantNotFound(t, s.DeleteAccessRole(ctx, "oncall"))
}

func testSecretScope(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.PutSecret(ctx, store.Secret{Name: "pg", Ciphertext: []byte{1}, Owner: "root", ScopeKind: store.ScopeService, Scope: "postgres", UpdatedAt: base}))
	must(t, s.PutSecret(ctx, store.Secret{Name: "any", Ciphertext: []byte{2}, Owner: "root", UpdatedAt: base}))
	sec, err := s.GetSecret(ctx, "pg")
	must(t, err)
	if sec.ScopeKind != store.ScopeService || sec.Scope != "postgres" {
		t.Fatalf("secret scope = %q %q", sec.ScopeKind, sec.Scope)
	}
	list, err := s.ListSecrets(ctx)
	must(t, err)
	if len(list) != 2 || list[0].Name != "any" || list[0].ScopeKind != store.ScopeKeeper || list[1].Scope != "postgres" {
		t.Fatalf("secrets = %+v", list)
	}
	must(t, s.PutSecret(ctx, store.Secret{Name: "pg", Ciphertext: []byte{3}, Owner: "x", ScopeKind: store.ScopeIncarnation, Scope: "pg-1"}))
	sec, err = s.GetSecret(ctx, "pg")
	must(t, err)
	if sec.ScopeKind != store.ScopeIncarnation || sec.Scope != "pg-1" || sec.Owner != "root" {
		t.Fatalf("secret after re-scoping = %+v", sec)
	}
}
