package api

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

func init() { routeGroups = append(routeGroups, (*Server).routesSoulsAdmin) }

// routesSoulsAdmin lets an admin forget a soul or move its SID to a new
// key (SPEC §10.3, audit L2): a reinstalled host, or a SID squatted by a
// stranger's hello, can join again.
func (s *Server) routesSoulsAdmin(rt *Router) {
	rt.Handle("DELETE /v1/souls/{sid}", onPath(auth.PermManageSouls, auth.ObjSoul, "sid"), s.deleteSoul)
	rt.Handle("POST /v1/souls/{sid}/rekey", onPath(auth.PermManageSouls, auth.ObjSoul, "sid"), s.rekeySoul)
}

// disconnect closes the stream of soul sid held by holder, if any.
func (s *Server) disconnect(ctx context.Context, sid, holder, reason string) {
	if ss, ok := s.soulAdmin().(StoreSouls); ok && ss.Disconnect != nil && holder != "" {
		ss.Disconnect(ctx, sid, holder, reason)
	}
}

// deleteSoul forgets a soul: its key binding, its covens and its
// incarnation memberships (the audit entry names the incarnations). Its
// stream is closed; the host may say hello again, as a new soul.
func (s *Server) deleteSoul(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	sid := r.PathValue("sid")
	before, err := s.store.GetSoul(r.Context(), sid)
	if err != nil {
		return fmt.Errorf("soul %s: %w", sid, err)
	}
	incs, err := s.store.DeleteSoul(r.Context(), sid)
	if err != nil {
		return fmt.Errorf("soul %s: %w", sid, err)
	}
	AddAuditField(r, "removed_from_incarnations", nonNil(incs))
	AddAuditField(r, "key", domain.KeyFingerprint(before.PublicKey))
	s.disconnect(r.Context(), sid, before.KeeperID, "forgotten by an Archon")
	writeJSON(w, http.StatusOK, apitypes.DeletedSoul{SID: sid, Deleted: true, Incarnations: nonNil(incs)})
	return nil
}

// rekeySoul binds a SID to a new public key, keeping its covens and
// memberships; a stream under the old key is closed.
func (s *Server) rekeySoul(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	var req apitypes.RekeySoulRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	pub, err := parsePublicKey(req.Key)
	if err != nil {
		return err
	}
	sid := r.PathValue("sid")
	before, err := s.store.GetSoul(r.Context(), sid)
	if err != nil {
		return fmt.Errorf("soul %s: %w", sid, err)
	}
	if err := s.store.RekeySoul(r.Context(), sid, pub, time.Now().UTC()); err != nil {
		return fmt.Errorf("soul %s: %w", sid, err)
	}
	SetAuditField(r, "key", domain.KeyFingerprint(pub))
	AddAuditField(r, "old_key", domain.KeyFingerprint(before.PublicKey))
	s.disconnect(r.Context(), sid, before.KeeperID, "moved to another key by an Archon")
	soul, err := s.store.GetSoul(r.Context(), sid)
	if err != nil {
		return fmt.Errorf("soul %s: %w", sid, err)
	}
	soul.Soulprint = soul.Facts()
	writeJSON(w, http.StatusOK, wireSoul(soul))
	return nil
}

// parsePublicKey reads an Ed25519 public key given as a PEM "PUBLIC KEY"
// block (soul key, or openssl pkey -in soul.key -pubout) or as the base64 of its 32
// bytes (public_key of GET /v1/souls).
func parsePublicKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, invalidf("key is required: the soul's Ed25519 public key, as PEM (soul key, on the host) or base64 (soul key --base64)")
	}
	if blk, _ := pem.Decode([]byte(s)); blk != nil {
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, invalidf("key: %v", err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, invalidf("key is a %T, not an Ed25519 public key", k)
		}
		return pub, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, invalidf("key must be a PEM public key or the base64 of a %d-byte Ed25519 public key", ed25519.PublicKeySize)
	}
	return b, nil
}
