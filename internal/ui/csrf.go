package ui

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// csrfField is the form field that carries the CSRF token of every action
// form.
const csrfField = "csrf"

// csrfLabel is the message the session's token is MACed over.
const csrfLabel = "soulstack ui csrf v1"

// csrfToken is the CSRF token of a session: an HMAC-SHA256, keyed by the
// session cookie (the session's random id, which script on another site
// can neither read nor guess), of a fixed label. It needs no more server
// state than the session, works on every keeper of a cluster and changes
// with every sign-in.
func csrfToken(session string) string {
	m := hmac.New(sha256.New, []byte(session))
	m.Write([]byte(csrfLabel))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF verifies a state-changing request of a signed-in session: it
// must come from a page of this origin (Origin, or Referer when a browser
// sends no Origin; a request with neither is refused) and carry the
// session's CSRF token. The cookie is SameSite=Strict besides, and
// http.CrossOriginProtection in front of every route refuses cross-site
// fetches by their Sec-Fetch-Site.
func checkCSRF(r *http.Request, session string) error {
	if err := sameOrigin(r); err != nil {
		return err
	}
	got := r.PostFormValue(csrfField)
	if got == "" || !hmac.Equal([]byte(got), []byte(csrfToken(session))) {
		return domain.Errorf(domain.CodeForbidden, "the form's CSRF token is missing or stale: reload the page and try again")
	}
	return nil
}

// sameOrigin refuses a request whose Origin (or, lacking it, Referer) is
// not the UI's own scheme and host.
func sameOrigin(r *http.Request) error {
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" || src == "null" {
		return domain.Errorf(domain.CodeForbidden, "cross-site request refused: no Origin or Referer")
	}
	o, err := url.Parse(src)
	if err != nil || o.Host == "" {
		return domain.Errorf(domain.CodeForbidden, "cross-site request refused: bad Origin")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	// Behind a TLS-terminating proxy the request arrives over plain HTTP:
	// accept either scheme, the host must match exactly.
	if !strings.EqualFold(o.Host, r.Host) || (o.Scheme != scheme && o.Scheme != "https") {
		return domain.Errorf(domain.CodeForbidden, "cross-site request refused: origin %s is not this keeper", o.Scheme+"://"+o.Host)
	}
	return nil
}

// actions is what a page needs to offer actions: the CSRF token for its
// forms and which roles the signed-in Archon holds. A page hides the
// forms its Archon's role cannot use; the API refuses them anyway.
type actions struct {
	CSRF     string
	Operator bool // may run (on the page's object): runs, unlock, cancel, resume, drift
	Admin    bool // may manage souls (on the page's object): souls, join tokens
	Enabled  bool // the UI can act at all (an API is configured)
}

// actionsFor is the actions of the request's session.
func (u *UI) actionsFor(r *http.Request) actions {
	p, ok := auth.FromContext(r.Context())
	c, err := r.Cookie(cookieName)
	if !ok || err != nil || u.cfg.API == nil {
		return actions{}
	}
	a := actions{
		CSRF:     csrfToken(c.Value),
		Operator: p.Role.Allows(auth.RoleOperator),
		Admin:    p.Role.Allows(auth.RoleAdmin),
		Enabled:  true,
	}
	if _, ok := u.cfg.Auth.(authorizer); ok {
		// Keeper-wide pages: the buttons of what the Archon's grants
		// allow somewhere (object pages use actionsOn).
		a.Operator = u.may(r, auth.PermRun, auth.Keeper()) || u.anywhere(r, auth.PermRun)
		a.Admin = u.may(r, auth.PermManageSouls, auth.Keeper()) || u.anywhere(r, auth.PermManageSouls)
	}
	return a
}
