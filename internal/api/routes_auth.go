package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesAuth) }

// routesAuth serves Archons, their tokens and the audit log.
func (s *Server) routesAuth(rt *Router) {
	rt.Handle("POST /v1/archons", onKeeper(auth.PermManageAccess), s.createArchon)
	rt.Handle("GET /v1/archons", onKeeper(auth.PermManageAccess), s.listArchons)
	rt.Handle("POST /v1/archons/{id}/disable", onKeeper(auth.PermManageAccess), s.disableArchon)
	rt.Handle("POST /v1/archons/{id}/enable", onKeeper(auth.PermManageAccess), s.enableArchon)
	rt.Handle("GET /v1/tokens", anyArchon(), s.listTokens)
	rt.Handle("POST /v1/tokens", onKeeper(auth.PermOwnTokens), s.createToken)
	rt.Handle("DELETE /v1/tokens/{id}", onKeeper(auth.PermOwnTokens), s.revokeToken)
	rt.Handle("GET /v1/audit", onKeeper(auth.PermReadAudit), s.listAudit)
	rt.Handle("GET /v1/whoami", anyArchon(), s.whoami)
}

// createArchon creates an Archon and its first token, which lasts no
// longer than the caller's own token (SPEC §10.2). The first token is not
// linked to the caller's: revoking the admin's token leaves the Archons it
// created working.
func (s *Server) createArchon(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.CreateArchonRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	role, err := auth.ParseRole(req.Role)
	if err != nil {
		return err
	}
	ttl, err := s.auth.Bounded(p, time.Duration(req.TTL))
	if err != nil {
		return err
	}
	ar, err := s.auth.CreateArchon(r.Context(), req.Name, role)
	if err != nil {
		return err
	}
	SetAuditTarget(r, ar.ID)
	tok, err := s.auth.IssueToken(r.Context(), ar, ttl, "first token of "+ar.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apitypes.CreatedArchon{Archon: wireArchon(ar), Token: issued(tok)})
	return nil
}

func (s *Server) listArchons(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	as, err := s.auth.Archons(r.Context())
	if err != nil {
		return err
	}
	page, err := pageSlice(w, r, as, smallPage, func(x store.Archon) string { return x.ID })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(page, wireArchon))
	return nil
}

// disableArchon locks an Archon out and revokes each of its tokens (a
// leaked token, and whatever tokens it minted): they are refused from
// their next request on, also after the Archon is enabled again.
func (s *Server) disableArchon(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ar, err := s.auth.DisableArchon(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireArchon(ar))
	return nil
}

func (s *Server) enableArchon(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ar, err := s.auth.EnableArchon(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireArchon(ar))
	return nil
}

// listTokens lists token records (never the tokens): an admin sees every
// Archon's (?archon_id= narrows), anyone else its own.
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	ts, err := s.auth.Tokens(r.Context(), p, r.URL.Query().Get("archon_id"))
	if err != nil {
		return err
	}
	page, err := pageSlice(w, r, ts, smallPage, func(x store.Token) string { return x.ID })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(page, wireToken))
	return nil
}

// createToken mints a token for the caller, or (admin only) for another
// archon: no longer-lived than the calling token, of its role or lower,
// and revoked with it (SPEC §10.2, audit L8).
func (s *Server) createToken(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.CreateTokenRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	id := req.ArchonID
	if id == "" {
		id = p.ArchonID
	}
	if id != p.ArchonID {
		if err := s.can(r, p, auth.PermManageAccess); err != nil {
			return err
		}
	}
	ar, err := s.auth.Archon(r.Context(), id)
	if err != nil {
		return err
	}
	if ar.DisabledAt != nil {
		return domain.Errorf(domain.CodeConflict, "archon %s is disabled: its tokens are refused; enable it first", ar.Name)
	}
	tok, err := s.auth.Mint(r.Context(), p, ar, time.Duration(req.TTL), req.Description)
	if err != nil {
		return err
	}
	SetAuditTarget(r, tok.ID)
	writeJSON(w, http.StatusCreated, issued(tok))
	return nil
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	if err := s.auth.RevokeToken(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	q := r.URL.Query()
	f := store.AuditFilter{ArchonID: q.Get("archon_id"), Action: q.Get("action")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 10000 {
			return invalidf("limit must be an integer in 1..10000, not %q", l)
		}
		f.Limit = n
	}
	es, err := s.auth.Audit(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireList(es, wireAudit))
	return nil
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	ar, err := s.auth.Archon(r.Context(), p.ArchonID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Whoami{
		ArchonID: p.ArchonID, Name: ar.Name, Role: string(p.Role), TokenID: p.TokenID, ExpiresAt: p.ExpiresAt,
	})
	return nil
}

func issued(t auth.Issued) apitypes.IssuedToken {
	return apitypes.IssuedToken{ID: t.ID, Token: t.Token, ExpiresAt: t.ExpiresAt}
}

// nonNil makes an empty list render as [] rather than null.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
