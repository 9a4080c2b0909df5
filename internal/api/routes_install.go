package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/jointoken"
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

// JoinCheckRequest is the body of POST /v1/soul/join-check.
type JoinCheckRequest struct {
	Token string `json:"token"`
}

// JoinCheck answers POST /v1/soul/join-check for a usable token.
type JoinCheck struct {
	Covens    []string  `json:"covens"`
	ExpiresAt time.Time `json:"expires_at"`
}

// joinCheck tells whether a join token would admit a soul now, without
// using it: install.sh asks before it touches the host.
func (s *Server) joinCheck(w http.ResponseWriter, r *http.Request) {
	var req JoinCheckRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
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
		s.writeError(w, r, domain.Errorf(domain.CodeNotFound, "the join token is unknown, expired, revoked or used up: create another (soulctl join-token create)"))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, JoinCheck{Covens: t.Covens, ExpiresAt: t.ExpiresAt})
}
