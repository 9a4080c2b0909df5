package api

import (
	"context"
	"errors"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// delegate applies the HeaderOnBehalfOf header of a call: the Checker runs
// a schedule's or an operator's procedure for them, and its calls are
// authorized for, and audited under, that Archon (SPEC §10.2, audit M4).
// Only the Checker's own Archon (Config.CheckerArchon) may send it; the
// Archon acted for must exist and be enabled (a disabled operator's
// running tasks stop acting as her), and the call may do only what both
// may (Principal.Via: the authorizer asks both Archons' grants). It returns the principal to use and the id of the Checker's
// Archon to record as "via" ("" when the header is absent or names the
// caller itself).
func (s *Server) delegate(ctx context.Context, p auth.Principal, onBehalf string) (auth.Principal, string, error) {
	if onBehalf == "" || onBehalf == p.ArchonID {
		return p, "", nil
	}
	caller, err := s.store.GetArchon(ctx, p.ArchonID)
	if err != nil {
		return p, "", err
	}
	if s.cfg.CheckerArchon == "" || caller.Name != s.cfg.CheckerArchon {
		return p, "", domain.Errorf(domain.CodeForbidden, "only the Keeper's Checker may act on behalf of another Archon (header %s)", apitypes.HeaderOnBehalfOf)
	}
	owner, err := s.store.GetArchon(ctx, onBehalf)
	if errors.Is(err, domain.ErrNotFound) {
		return p, "", domain.Errorf(domain.CodeForbidden, "the Archon %s this Checker task acts for no longer exists", onBehalf)
	} else if err != nil {
		return p, "", err
	}
	if owner.DisabledAt != nil {
		return p, "", domain.Errorf(domain.CodeForbidden, "Archon %s, for whom this Checker task acts, is disabled", owner.Name)
	}
	role := auth.Role(owner.Role)
	if !p.Role.Allows(role) {
		role = p.Role
	}
	return auth.Principal{ArchonID: owner.ID, Role: role, TokenID: p.TokenID, ExpiresAt: p.ExpiresAt, Via: p.ArchonID}, p.ArchonID, nil
}

// actsFor is the Archon Checker tasks launched by p act for: p's own, but
// none for the Checker's Archon itself (a task it launches with no one
// named acts for no one, as before owners were recorded).
func (s *Server) actsFor(ctx context.Context, p auth.Principal) string {
	if s.cfg.CheckerArchon == "" {
		return p.ArchonID
	}
	a, err := s.store.GetArchon(ctx, p.ArchonID)
	if err == nil && a.Name == s.cfg.CheckerArchon {
		return ""
	}
	return p.ArchonID
}
