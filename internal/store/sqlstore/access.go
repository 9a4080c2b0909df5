package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"

	"github.com/soulstack/soulstack/internal/store"
)

// CreateTeam inserts a team without members.
func (s *Store) CreateTeam(ctx context.Context, t store.Team) error {
	_, err := s.write(ctx, `INSERT INTO teams (name, description, created_at) VALUES (?, ?, ?)`,
		t.Name, t.Description, s.ts(s.orNow(t.CreatedAt)))
	return s.wrap("creating team "+t.Name, err)
}

// GetTeam returns a team with its members.
func (s *Store) GetTeam(ctx context.Context, name string) (store.Team, error) {
	var t store.Team
	err := s.reader().row(ctx, `SELECT name, description, created_at FROM teams WHERE name = ?`, name).
		Scan(&t.Name, &t.Description, timeCol{&t.CreatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return t, notFound("team", name)
	}
	if err != nil {
		return t, s.wrap("reading team "+name, err)
	}
	rows, err := s.reader().query(ctx, `SELECT archon_id FROM team_members WHERE team = ? ORDER BY archon_id`, name)
	if err != nil {
		return t, s.wrap("reading team "+name, err)
	}
	t.Members, err = collect(rows, scanString)
	if t.Members == nil {
		t.Members = []string{}
	}
	return t, s.wrap("reading team "+name, err)
}

func scanString(sc interface{ Scan(...any) error }) (string, error) {
	var v string
	err := sc.Scan(&v)
	return v, err
}

// ListTeams lists every team by name, with its members.
func (s *Store) ListTeams(ctx context.Context) ([]store.Team, error) {
	const op = "listing teams"
	rows, err := s.reader().query(ctx, `SELECT name, description, created_at FROM teams ORDER BY name`)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	teams, err := collect(rows, func(sc interface{ Scan(...any) error }) (store.Team, error) {
		t := store.Team{Members: []string{}}
		err := sc.Scan(&t.Name, &t.Description, timeCol{&t.CreatedAt})
		return t, err
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	type member struct{ team, archon string }
	rows, err = s.reader().query(ctx, `SELECT team, archon_id FROM team_members ORDER BY team, archon_id`)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	ms, err := collect(rows, func(sc interface{ Scan(...any) error }) (member, error) {
		var m member
		err := sc.Scan(&m.team, &m.archon)
		return m, err
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	for _, m := range ms {
		if i := slices.IndexFunc(teams, func(t store.Team) bool { return t.Name == m.team }); i >= 0 {
			teams[i].Members = append(teams[i].Members, m.archon)
		}
	}
	return teams, nil
}

// DeleteTeam deletes a team, its memberships and the grants to it.
func (s *Store) DeleteTeam(ctx context.Context, name string) error {
	return s.inTx(ctx, "deleting team "+name, func(tx q) error {
		if _, err := tx.exec(ctx, `DELETE FROM grants WHERE subject_kind = ? AND subject = ?`, store.SubjectTeam, name); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM team_members WHERE team = ?`, name); err != nil {
			return err
		}
		n, err := tx.affected(ctx, `DELETE FROM teams WHERE name = ?`, name)
		if err == nil && n == 0 {
			return notFound("team", name)
		}
		return err
	})
}

// AddTeamMember adds an Archon to a team.
func (s *Store) AddTeamMember(ctx context.Context, team, archonID string) error {
	return s.inTx(ctx, "adding a member to team "+team, func(tx q) error {
		var n int
		if err := tx.row(ctx, `SELECT COUNT(*) FROM teams WHERE name = ?`, team).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return notFound("team", team)
		}
		if err := tx.row(ctx, `SELECT COUNT(*) FROM archons WHERE id = ?`, archonID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return notFound("archon", archonID)
		}
		_, err := tx.exec(ctx, `INSERT INTO team_members (team, archon_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, team, archonID)
		return err
	})
}

// RemoveTeamMember removes an Archon from a team.
func (s *Store) RemoveTeamMember(ctx context.Context, team, archonID string) error {
	n, err := s.write(ctx, `DELETE FROM team_members WHERE team = ? AND archon_id = ?`, team, archonID)
	if err == nil && n == 0 {
		return notFound("member of team "+team, archonID)
	}
	return s.wrap("removing a member from team "+team, err)
}

// ArchonTeams lists the teams an Archon belongs to, by name.
func (s *Store) ArchonTeams(ctx context.Context, archonID string) ([]string, error) {
	rows, err := s.reader().query(ctx, `SELECT team FROM team_members WHERE archon_id = ? ORDER BY team`, archonID)
	if err != nil {
		return nil, s.wrap("listing the archon's teams", err)
	}
	out, err := collect(rows, scanString)
	return out, s.wrap("listing the archon's teams", err)
}

// PutAccessRole inserts or replaces a custom role.
func (s *Store) PutAccessRole(ctx context.Context, r store.AccessRole) error {
	perms := slices.Clone(r.Permissions)
	slices.Sort(perms)
	perms = slices.Compact(perms)
	b, err := json.Marshal(nonNilStrings(perms))
	if err != nil {
		return s.wrap("storing role "+r.Name, err)
	}
	now := s.now()
	_, err = s.write(ctx, `INSERT INTO access_roles (name, permissions, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET permissions = excluded.permissions, description = excluded.description, updated_at = excluded.updated_at`,
		r.Name, string(b), r.Description, s.ts(s.orNow(r.CreatedAt)), s.ts(now))
	return s.wrap("storing role "+r.Name, err)
}

func nonNilStrings(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

const accessRoleCols = `name, permissions, description, created_at, updated_at`

func scanAccessRole(sc interface{ Scan(...any) error }) (store.AccessRole, error) {
	var r store.AccessRole
	var perms string
	if err := sc.Scan(&r.Name, &perms, &r.Description, timeCol{&r.CreatedAt}, timeCol{&r.UpdatedAt}); err != nil {
		return r, err
	}
	err := json.Unmarshal([]byte(perms), &r.Permissions)
	r.Permissions = nonNilStrings(r.Permissions)
	return r, err
}

// GetAccessRole returns a custom role.
func (s *Store) GetAccessRole(ctx context.Context, name string) (store.AccessRole, error) {
	r, err := scanAccessRole(s.reader().row(ctx, `SELECT `+accessRoleCols+` FROM access_roles WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return r, notFound("role", name)
	}
	return r, s.wrap("reading role "+name, err)
}

// ListAccessRoles lists the custom roles by name.
func (s *Store) ListAccessRoles(ctx context.Context) ([]store.AccessRole, error) {
	rows, err := s.reader().query(ctx, `SELECT `+accessRoleCols+` FROM access_roles ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing roles", err)
	}
	out, err := collect(rows, scanAccessRole)
	return out, s.wrap("listing roles", err)
}

// DeleteAccessRole deletes a custom role no grant gives.
func (s *Store) DeleteAccessRole(ctx context.Context, name string) error {
	return s.inTx(ctx, "deleting role "+name, func(tx q) error {
		var n int
		if err := tx.row(ctx, `SELECT COUNT(*) FROM grants WHERE role = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return conflict(nil, "role %s is given by %d grant(s): revoke them first", name, n)
		}
		m, err := tx.affected(ctx, `DELETE FROM access_roles WHERE name = ?`, name)
		if err == nil && m == 0 {
			return notFound("role", name)
		}
		return err
	})
}

const grantCols = `id, subject_kind, subject, role, scope_kind, scope, created_by, created_at`

func scanGrant(sc interface{ Scan(...any) error }) (store.Grant, error) {
	var g store.Grant
	err := sc.Scan(&g.ID, &g.SubjectKind, &g.Subject, &g.Role, &g.ScopeKind, &g.Scope, &g.CreatedBy, timeCol{&g.CreatedAt})
	return g, err
}

// CreateGrant inserts a grant.
func (s *Store) CreateGrant(ctx context.Context, g store.Grant) error {
	if g.ID == "" || g.SubjectKind == "" || g.Subject == "" || g.Role == "" || g.ScopeKind == "" {
		return s.wrap("creating a grant", invalid("a grant needs an id, a subject, a role and a scope"))
	}
	_, err := s.write(ctx, `INSERT INTO grants (`+grantCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		g.ID, g.SubjectKind, g.Subject, g.Role, g.ScopeKind, g.Scope, g.CreatedBy, s.ts(s.orNow(g.CreatedAt)))
	return s.wrap("creating a grant of "+g.Role+" to "+g.SubjectKind+" "+g.Subject, err)
}

// GetGrant returns one grant.
func (s *Store) GetGrant(ctx context.Context, id string) (store.Grant, error) {
	g, err := scanGrant(s.reader().row(ctx, `SELECT `+grantCols+` FROM grants WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return g, notFound("grant", id)
	}
	return g, s.wrap("reading grant "+id, err)
}

// ListGrants lists the grants matching f.
func (s *Store) ListGrants(ctx context.Context, f store.GrantFilter) ([]store.Grant, error) {
	query := `SELECT ` + grantCols + ` FROM grants WHERE 1 = 1`
	var args []any
	if f.SubjectKind != "" {
		query += ` AND subject_kind = ?`
		args = append(args, f.SubjectKind)
	}
	if f.Subject != "" {
		query += ` AND subject = ?`
		args = append(args, f.Subject)
	}
	if f.Role != "" {
		query += ` AND role = ?`
		args = append(args, f.Role)
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY subject_kind, subject, scope_kind, scope, role, id`, args...)
	if err != nil {
		return nil, s.wrap("listing grants", err)
	}
	out, err := collect(rows, scanGrant)
	return out, s.wrap("listing grants", err)
}

// ArchonGrants lists the grants of an Archon and of its teams.
func (s *Store) ArchonGrants(ctx context.Context, archonID string) ([]store.Grant, error) {
	rows, err := s.reader().query(ctx, `SELECT `+grantCols+` FROM grants
		WHERE (subject_kind = ? AND subject = ?)
		   OR (subject_kind = ? AND subject IN (SELECT team FROM team_members WHERE archon_id = ?))
		ORDER BY subject_kind, subject, scope_kind, scope, role, id`,
		store.SubjectArchon, archonID, store.SubjectTeam, archonID)
	if err != nil {
		return nil, s.wrap("reading the archon's grants", err)
	}
	out, err := collect(rows, scanGrant)
	return out, s.wrap("reading the archon's grants", err)
}

// DeleteGrant deletes one grant.
func (s *Store) DeleteGrant(ctx context.Context, id string) error {
	n, err := s.write(ctx, `DELETE FROM grants WHERE id = ?`, id)
	if err == nil && n == 0 {
		return notFound("grant", id)
	}
	return s.wrap("deleting grant "+id, err)
}
