package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// ListTeams lists the teams with their members (manage_access).
func (c *Client) ListTeams(ctx context.Context) ([]apitypes.Team, error) {
	var out []apitypes.Team
	return out, c.Do(ctx, http.MethodGet, "/v1/teams", nil, nil, &out)
}

// CreateTeam creates a team.
func (c *Client) CreateTeam(ctx context.Context, req apitypes.CreateTeamRequest) (apitypes.Team, error) {
	var out apitypes.Team
	return out, c.Do(ctx, http.MethodPost, "/v1/teams", nil, req, &out)
}

// GetTeam returns one team.
func (c *Client) GetTeam(ctx context.Context, name string) (apitypes.Team, error) {
	var out apitypes.Team
	return out, c.Do(ctx, http.MethodGet, "/v1/teams/"+url.PathEscape(name), nil, nil, &out)
}

// DeleteTeam deletes a team and the grants to it.
func (c *Client) DeleteTeam(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/teams/"+url.PathEscape(name), nil, nil, nil)
}

// AddTeamMember adds an Archon (id or name) to a team.
func (c *Client) AddTeamMember(ctx context.Context, team, archon string) (apitypes.Team, error) {
	var out apitypes.Team
	return out, c.Do(ctx, http.MethodPost, "/v1/teams/"+url.PathEscape(team)+"/members", nil, apitypes.TeamMemberRequest{Archon: archon}, &out)
}

// RemoveTeamMember removes an Archon (id or name) from a team.
func (c *Client) RemoveTeamMember(ctx context.Context, team, archon string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/teams/"+url.PathEscape(team)+"/members/"+url.PathEscape(archon), nil, nil, nil)
}

// ListRoles lists the built-in and custom roles.
func (c *Client) ListRoles(ctx context.Context) ([]apitypes.AccessRole, error) {
	var out []apitypes.AccessRole
	return out, c.Do(ctx, http.MethodGet, "/v1/roles", nil, nil, &out)
}

// PutRole creates or replaces a custom role.
func (c *Client) PutRole(ctx context.Context, name string, req apitypes.PutRoleRequest) (apitypes.AccessRole, error) {
	var out apitypes.AccessRole
	return out, c.Do(ctx, http.MethodPut, "/v1/roles/"+url.PathEscape(name), nil, req, &out)
}

// DeleteRole deletes a custom role.
func (c *Client) DeleteRole(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/roles/"+url.PathEscape(name), nil, nil, nil)
}

// ListPermissions lists every permission.
func (c *Client) ListPermissions(ctx context.Context) ([]apitypes.Permission, error) {
	var out []apitypes.Permission
	return out, c.Do(ctx, http.MethodGet, "/v1/permissions", nil, nil, &out)
}

// GrantFilter narrows ListGrants: the grants an Archon holds (its teams'
// included), or a team's.
type GrantFilter struct{ Archon, Team string }

// ListGrants lists grants.
func (c *Client) ListGrants(ctx context.Context, f GrantFilter) ([]apitypes.Grant, error) {
	q := url.Values{}
	if f.Archon != "" {
		q.Set("archon", f.Archon)
	}
	if f.Team != "" {
		q.Set("team", f.Team)
	}
	var out []apitypes.Grant
	return out, c.Do(ctx, http.MethodGet, "/v1/grants", q, nil, &out)
}

// CreateGrant gives an Archon or a team a role on a scope.
func (c *Client) CreateGrant(ctx context.Context, req apitypes.GrantRequest) (apitypes.Grant, error) {
	var out apitypes.Grant
	return out, c.Do(ctx, http.MethodPost, "/v1/grants", nil, req, &out)
}

// DeleteGrant revokes a grant.
func (c *Client) DeleteGrant(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/grants/"+url.PathEscape(id), nil, nil, nil)
}

// AccessCheck explains whether archon ("" = the caller) may do permission
// on object (keeper, kind:name).
func (c *Client) AccessCheck(ctx context.Context, archon, permission, object string) (apitypes.AccessDecision, error) {
	q := url.Values{"permission": {permission}, "object": {object}}
	if archon != "" {
		q.Set("archon", archon)
	}
	var out apitypes.AccessDecision
	return out, c.Do(ctx, http.MethodGet, "/v1/access/check", q, nil, &out)
}
