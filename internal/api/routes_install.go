package api

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/store"
)

func init() { routeGroups = append(routeGroups, (*Server).routesInstall) }

// routesInstall serves what a new host needs to become a soul: the
// installer script, the soul binary of this Keeper's version and a check
// of its join token. All are public: the host has no credentials yet, and
// none reveals fleet data (a join token's covens are told only to its
// holder).
func (s *Server) routesInstall(rt *Router) {
	in := s.cfg.Install
	if in == nil {
		return
	}
	rt.Public("GET /install.sh", http.HandlerFunc(in.ServeScript))
	rt.Public("GET /v1/soul/binary", http.HandlerFunc(in.ServeBinary))
	rt.Public("POST /v1/soul/join-check", http.HandlerFunc(s.joinCheck))
}

// JoinCheckRequest is the body of POST /v1/soul/join-check. Token may be
// empty (a soul that will wait as pending); SID and PublicKey (base64,
// empty for a host without a soul key yet) let the Keeper tell a host
// whose SID is bound to another key before it is touched.
type JoinCheckRequest struct {
	Token     string `json:"token"`
	SID       string `json:"sid,omitempty"`
	PublicKey string `json:"public_key,omitempty"`
}

// JoinCheck answers POST /v1/soul/join-check for a soul that would be let
// in: accepted with Covens, or pending (no token).
type JoinCheck struct {
	Covens    []string   `json:"covens"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Pending   bool       `json:"pending,omitempty"`
}

// joinCheck tells whether the soul install.sh is about to install would be
// let in now, without using the token: install.sh asks before it touches
// the host. It refuses what the soul's hello would be refused for: a bad
// token, and a SID bound to another key (which any hello under that SID
// learns anyway).
func (s *Server) joinCheck(w http.ResponseWriter, r *http.Request) {
	var req JoinCheckRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	var tok *store.JoinToken
	if req.Token != "" {
		secret, fp, err := jointoken.Decode(req.Token)
		if err != nil {
			s.writeError(w, r, domain.Errorf(domain.CodeInvalid, "%v", err))
			return
		}
		if s.cfg.Fingerprint != "" && fp != s.cfg.Fingerprint {
			s.writeError(w, r, domain.Errorf(domain.CodeUnprocessable, "the join token is for another keeper (its certificate fingerprint %s is not this keeper's)", fp))
			return
		}
		t, err := s.store.PeekJoinToken(r.Context(), jointoken.Hash(secret), time.Now())
		if errors.Is(err, domain.ErrNotFound) {
			msg := "join token unusable"
			var de *domain.Error
			if errors.As(err, &de) {
				msg = de.Message
			}
			s.writeError(w, r, domain.Errorf(domain.CodeNotFound, "%s: create another (soulctl join-token create)", msg))
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		tok = &t
	}
	if req.SID != "" {
		if err := s.checkJoinSID(r, req, tok != nil); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if tok == nil {
		writeJSON(w, http.StatusOK, JoinCheck{Covens: []string{}, Pending: true})
		return
	}
	writeJSON(w, http.StatusOK, JoinCheck{Covens: tok.Covens, ExpiresAt: &tok.ExpiresAt})
}

// checkJoinSID refuses a SID the gateway would refuse: rejected, or bound
// to another key than the one presented (a pending record under another
// key gives way to a valid join token, as in the gateway).
func (s *Server) checkJoinSID(r *http.Request, req JoinCheckRequest, withToken bool) error {
	known, err := s.store.GetSoul(r.Context(), req.SID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if known.Status == store.SoulRejected {
		return domain.Errorf(domain.CodeConflict, "an Archon rejected soul %s: an admin lets this host join again with soulctl souls delete %s", req.SID, req.SID)
	}
	key, _ := base64.StdEncoding.DecodeString(req.PublicKey)
	if bytes.Equal(key, known.PublicKey) || (known.Status == store.SoulPending && withToken) {
		return nil
	}
	return domain.Errorf(domain.CodeConflict, "SID %s is already bound to another key (another host, or this one before a reinstall): an admin forgets it with soulctl souls delete %s, or moves it to this host's key with soulctl souls rekey %s (soul key prints a host's key)", req.SID, req.SID, req.SID)
}
