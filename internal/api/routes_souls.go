package api

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/store"
)

// DefaultJoinTokenTTL is the lifetime of a join token when none is asked for.
const DefaultJoinTokenTTL = 24 * time.Hour

// SoulAdmin is the soul gateway's part in soul administration: accepting a
// pending soul lets its waiting stream in, rejecting one closes it. Both
// return the soul as stored afterwards.
type SoulAdmin interface {
	// AcceptSoul accepts soul sid into covens; key, when not "", is the
	// fingerprint of the key the Archon means it to hold.
	AcceptSoul(ctx context.Context, sid string, covens []string, key string) (store.Soul, error)
	RejectSoul(ctx context.Context, sid string) (store.Soul, error)
}

func init() { routeGroups = append(routeGroups, (*Server).routesSouls) }

// routesSouls serves the soul registry and join tokens.
func (s *Server) routesSouls(rt *Router) {
	rt.Handle("GET /v1/souls", listed(), s.listSouls)
	rt.Handle("GET /v1/souls/{sid}", onPath(auth.PermRead, auth.ObjSoul, "sid"), s.getSoul)
	rt.Handle("POST /v1/souls/{sid}/accept", acceptNeed(), s.acceptSoul)
	rt.Handle("POST /v1/souls/{sid}/reject", onPath(auth.PermManageSouls, auth.ObjSoul, "sid"), s.rejectSoul)
	rt.Handle("PUT /v1/souls/{sid}/covens", onPathAndBody(auth.PermManageSouls, auth.ObjSoul, "sid", auth.ObjCoven, "covens"), s.setCovens)
	if s.cfg.Fingerprint != "" {
		rt.Handle("POST /v1/join-tokens", onBody(auth.PermManageSouls, auth.ObjCoven, "covens"), s.createJoinToken)
	}
	rt.Handle("GET /v1/join-tokens", onKeeper(auth.PermManageSouls), s.listJoinTokens)
	rt.Handle("DELETE /v1/join-tokens/{id}", onKeeper(auth.PermManageSouls), s.revokeJoinToken)
}

func (s *Server) soulAdmin() SoulAdmin {
	if s.cfg.Souls != nil {
		return s.cfg.Souls
	}
	return StoreSouls{Store: s.store}
}

// soulsPage is GET /v1/souls' default page size.
const soulsPage = 500

func (s *Server) listSouls(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	q := r.URL.Query()
	f := store.SoulFilter{Status: q.Get("status"), Covens: q["coven"]}
	switch f.Status {
	case "", store.SoulPending, store.SoulConnected, store.SoulDisconnected, store.SoulRejected:
	default:
		return invalidf("unknown soul status %q: use pending, connected, disconnected or rejected", f.Status)
	}
	after, limit, err := pageParams(r, soulsPage)
	if err != nil {
		return err
	}
	acc, err := s.auth.Access(r.Context(), p)
	if err != nil {
		return err
	}
	sq := store.SoulQuery{Status: f.Status, Covens: f.Covens, After: after, Limit: limit}
	soulVisibility(acc, &sq)
	page, err := s.store.PageSouls(r.Context(), sq)
	if err != nil {
		return fmt.Errorf("listing souls: %w", err)
	}
	setNext(w, r, page.Next)
	souls := nonNil(page.Souls)
	for i := range souls {
		souls[i].Soulprint = souls[i].Facts()
	}
	writeJSON(w, http.StatusOK, wireList(souls, wireSoul))
	return nil
}

func (s *Server) getSoul(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	sid := r.PathValue("sid")
	soul, err := s.store.GetSoul(r.Context(), sid)
	if err != nil {
		return fmt.Errorf("soul %s: %w", sid, err)
	}
	soul.Soulprint = soul.Facts()
	writeJSON(w, http.StatusOK, wireSoul(soul))
	return nil
}

func (s *Server) acceptSoul(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.AcceptSoulRequest
	if err := decodeOptional(r, &req); err != nil {
		return err
	}
	covens, err := cleanCovens(req.Covens)
	if err != nil {
		return err
	}
	sid := r.PathValue("sid")
	soul, err := s.soulAdmin().AcceptSoul(r.Context(), sid, covens, req.Key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireSoul(soul))
	return nil
}

func (s *Server) rejectSoul(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	soul, err := s.soulAdmin().RejectSoul(r.Context(), r.PathValue("sid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireSoul(soul))
	return nil
}

func (s *Server) setCovens(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.CovensRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	covens, err := cleanCovens(req.Covens)
	if err != nil {
		return err
	}
	sid := r.PathValue("sid")
	if err := s.store.SetSoulCovens(r.Context(), sid, covens); err != nil {
		return fmt.Errorf("soul %s: %w", sid, err)
	}
	soul, err := s.store.GetSoul(r.Context(), sid)
	if err != nil {
		return fmt.Errorf("soul %s: %w", sid, err)
	}
	writeJSON(w, http.StatusOK, wireSoul(soul))
	return nil
}

func (s *Server) createJoinToken(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var req apitypes.CreateJoinTokenRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	covens, err := cleanCovens(req.Covens)
	if err != nil {
		return err
	}
	ttl := time.Duration(req.TTL)
	switch {
	case ttl == 0:
		ttl = DefaultJoinTokenTTL
	case ttl < 0:
		return invalidf("ttl must be positive")
	}
	if req.MaxUses < 0 {
		return invalidf("max_uses must be positive (or 0 for no limit), not %d", req.MaxUses)
	}
	secret, err := jointoken.NewSecret()
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	jt := store.JoinToken{
		ID:         uuid.NewString(),
		SecretHash: jointoken.Hash(secret),
		Covens:     covens,
		ExpiresAt:  now.Add(ttl),
		CreatedBy:  p.ArchonID,
		CreatedAt:  now,
		MaxUses:    req.MaxUses,
	}
	if err := s.store.CreateJoinToken(r.Context(), jt); err != nil {
		return fmt.Errorf("creating join token: %w", err)
	}
	SetAuditTarget(r, jt.ID)
	writeJSON(w, http.StatusCreated, apitypes.CreatedJoinToken{
		ID: jt.ID, Token: jointoken.Encode(secret, s.cfg.Fingerprint), Covens: covens, ExpiresAt: jt.ExpiresAt, MaxUses: jt.MaxUses,
	})
	return nil
}

// listJoinTokens lists join tokens with their uses; their secrets are
// never stored, so never shown.
func (s *Server) listJoinTokens(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	ts, err := s.store.ListJoinTokens(r.Context())
	if err != nil {
		return fmt.Errorf("listing join tokens: %w", err)
	}
	writeJSON(w, http.StatusOK, wireList(ts, wireJoinToken))
	return nil
}

// revokeJoinToken revokes a join token at once: souls presenting it are no
// longer accepted (souls that joined with it stay accepted). Revoking a
// revoked token is a no-op.
func (s *Server) revokeJoinToken(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	id := r.PathValue("id")
	if err := s.store.RevokeJoinToken(r.Context(), id, time.Now().UTC()); err != nil {
		return fmt.Errorf("revoking join token: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

var covenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$`)

// cleanCovens validates coven names and returns them sorted without
// duplicates (never nil).
func cleanCovens(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, c := range in {
		if !covenName.MatchString(c) {
			return nil, invalidf("coven %q is invalid: use 1-63 letters, digits, '_', '.', ':' or '-', starting with a letter or digit", c)
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// decodeOptional is decode for bodies that may be absent or empty.
func decodeOptional(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decode(r, v)
}

// StoreSouls administers souls through the store, which is what the soul
// gateway reads when a soul (re)connects: a pending soul retries with
// backoff and is let in once accepted. Disconnect, when set (the relay's
// Disconnect), closes the stream of a soul being rejected right away;
// holder is the keeper the store said held it before the reject ("" if
// none), which may be another keeper than this one.
type StoreSouls struct {
	Store      store.Store
	Disconnect func(ctx context.Context, sid, holder, reason string) bool
}

// AcceptSoul accepts a pending or rejected soul into covens, if it holds
// the key with fingerprint key ("" = the key it holds when read). It is
// then disconnected until its next connection attempt. The store accepts
// it only if it is still the record read here: a join token's takeover or
// another accept meanwhile is not overwritten (conflict).
func (ss StoreSouls) AcceptSoul(ctx context.Context, sid string, covens []string, key string) (store.Soul, error) {
	soul, err := ss.Store.GetSoul(ctx, sid)
	if err != nil {
		return store.Soul{}, fmt.Errorf("soul %s: %w", sid, err)
	}
	// A pending record holds whatever key said hello first under this
	// SID: the Archon names the key of the host it means.
	if key != "" && !domain.SameKeyFingerprint(key, soul.PublicKey) {
		return store.Soul{}, domain.Errorf(domain.CodeConflict, "soul %s holds key %s, not %s: it is not the host you mean, so it was not accepted (reject it, and check the host's soul log)", sid, domain.KeyFingerprint(soul.PublicKey), key)
	}
	if soul.Status != store.SoulPending && soul.Status != store.SoulRejected {
		return store.Soul{}, domain.Errorf(domain.CodeConflict, "soul %s is already accepted (status %s): use PUT /v1/souls/%s/covens to change its covens", sid, soul.Status, sid)
	}
	if err := ss.Store.AcceptSoul(ctx, sid, covens, soul.PublicKey); err != nil {
		if domain.ErrorCode(err) == domain.CodeConflict {
			return store.Soul{}, domain.Errorf(domain.CodeConflict, "soul %s changed while it was being accepted (it joined with a join token, or another Archon decided on it): it was not accepted; check it and try again", sid)
		}
		return store.Soul{}, fmt.Errorf("soul %s: %w", sid, err)
	}
	return ss.Store.GetSoul(ctx, sid)
}

// RejectSoul marks a soul rejected and closes its stream: it is refused
// until an Archon accepts it again.
func (ss StoreSouls) RejectSoul(ctx context.Context, sid string) (store.Soul, error) {
	before, err := ss.Store.GetSoul(ctx, sid)
	if err != nil {
		return store.Soul{}, fmt.Errorf("soul %s: %w", sid, err)
	}
	if err := ss.Store.SetSoulStatus(ctx, sid, store.SoulRejected, "", time.Now().UTC()); err != nil {
		return store.Soul{}, fmt.Errorf("soul %s: %w", sid, err)
	}
	if ss.Disconnect != nil {
		ss.Disconnect(ctx, sid, before.KeeperID, "rejected by an Archon")
	}
	return ss.Store.GetSoul(ctx, sid)
}
