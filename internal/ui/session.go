package ui

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// cookieName is the session cookie. Its value is the random id of a
// server-side session (auth.StartSession), never the Archon's token: it
// authenticates nothing but this UI, and nothing at all after logout.
const cookieName = "soulstack_ui"

// maxLoginForm bounds the login form body.
const maxLoginForm = 64 << 10

// principal authenticates the request's session cookie.
func (u *UI) principal(r *http.Request) (auth.Principal, error) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return auth.Principal{}, domain.Errorf(domain.CodeUnauthorized, "not signed in")
	}
	p, err := u.auth.AuthenticateSession(r.Context(), c.Value, u.limits())
	if err != nil {
		return auth.Principal{}, err
	}
	return p, nil
}

// page wraps a page handler: it authenticates the session (redirecting to
// the login page when there is none, or it is no longer valid), runs f and
// renders its view or its error.
func (u *UI) page(f func(r *http.Request) (view, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := u.principal(r)
		if err != nil {
			if domain.ErrorCode(err) == domain.CodeUnauthorized {
				u.toLogin(w, r, err)
				return
			}
			u.renderError(w, r, nil, err)
			return
		}
		r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		if err := checkQuery(r); err != nil {
			u.renderError(w, r, &p, err)
			return
		}
		v, err := f(r)
		if err != nil {
			u.renderError(w, r, &p, err)
			return
		}
		u.render(w, r, &p, http.StatusOK, v)
	})
}

// fragment wraps a handler polled by script (live fragments, the event
// stream): no redirect, a bare 401 tells the script to reload the page,
// which then goes to the login page.
func (u *UI) fragment(f func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := u.principal(r)
		if err == nil {
			err = checkQuery(r)
		}
		if err == nil {
			r = r.WithContext(auth.WithPrincipal(r.Context(), p))
			err = f(w, r)
		}
		if err != nil {
			status := httpStatus(err)
			if status >= 500 {
				u.log.ErrorContext(r.Context(), "ui fragment failed", "path", r.URL.Path, "err", err)
			}
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, http.StatusText(status), status)
		}
	})
}

// toLogin redirects to the login page, remembering where the user was
// going. A cookie that no longer authenticates is dropped, and the login
// page says why (from a fixed set of reasons: nothing from the request is
// echoed there).
func (u *UI) toLogin(w http.ResponseWriter, r *http.Request, err error) {
	q := url.Values{}
	if next := r.URL.RequestURI(); next != Prefix+"/" {
		q.Set("next", next)
	}
	if _, cerr := r.Cookie(cookieName); cerr == nil {
		u.clearCookie(w, r)
		q.Set("reason", endReason(err))
	}
	target := Prefix + "/login"
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// endReasons are the login page's messages for a session that ended.
var endReasons = map[string]string{
	"expired": "Your token has expired. Sign in with a new one.",
	"revoked": "Your token was revoked. Sign in with a new one.",
	"session": "Your session has expired. Sign in again.",
	"idle":    "Your session ended after a time without activity. Sign in again.",
	"invalid": "Your session is no longer valid. Sign in again.",
}

// endReason classifies why a session cookie was refused.
func endReason(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		switch {
		case strings.Contains(de.Message, "revoked"):
			return "revoked"
		case de.Message == "session expired":
			return "session"
		case de.Message == "session idle too long":
			return "idle"
		case strings.Contains(de.Message, "expired"):
			return "expired"
		}
	}
	return "invalid"
}

// loginView is the data of the login page.
type loginView struct {
	Next  string
	Error string
	Info  string
}

// loginForm shows the token form; a visitor with a valid session goes
// straight on.
func (u *UI) loginForm(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if _, err := u.principal(r); err == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	lv := loginView{Next: next}
	lv.Error = endReasons[r.URL.Query().Get("reason")]
	if r.URL.Query().Has("out") {
		lv.Info = "Signed out. This session is over; the token you signed in with stays valid (for soulctl) until it expires or is revoked."
	}
	u.render(w, r, nil, http.StatusOK, view{Template: "login", Title: "Sign in", Data: lv})
}

// login verifies the posted token and opens a server-side session for
// it; the cookie carries only the session's id.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	if err := r.ParseForm(); err != nil {
		u.render(w, r, nil, http.StatusBadRequest, view{Template: "login", Title: "Sign in",
			Data: loginView{Next: Prefix + "/", Error: "The form could not be read."}})
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	token := strings.TrimSpace(r.PostForm.Get("token"))
	s, err := u.auth.StartSession(r.Context(), token, u.limits())
	if err != nil {
		status, msg := http.StatusUnauthorized, "That token was refused."
		var de *domain.Error
		switch {
		case domain.ErrorCode(err) != domain.CodeUnauthorized:
			status, msg = httpStatus(err), "The keeper cannot check tokens right now; try again shortly."
			u.log.ErrorContext(r.Context(), "ui login: authenticating failed", "err", err)
		case errors.As(err, &de):
			msg = "That token was refused: " + de.Message + "."
		}
		u.render(w, r, nil, status, view{Template: "login", Title: "Sign in", Data: loginView{Next: next, Error: msg}})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    s.ID,
		Path:     Prefix,
		Expires:  s.ExpiresAt,
		HttpOnly: true,
		Secure:   u.secure(r),
		SameSite: http.SameSiteStrictMode,
	})
	p := s.Principal
	u.log.InfoContext(r.Context(), "ui login", "archon", p.ArchonID, "role", p.Role, "token_id", p.TokenID)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session server-side, so its cookie (or a copy of it)
// authenticates nothing any more, and drops the cookie. A signed-in
// session's logout needs its CSRF token like any action. The token the
// session was opened with is not revoked: it may serve soulctl too.
func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	c, err := r.Cookie(cookieName)
	if err == nil && c.Value != "" {
		if p, perr := u.principal(r); perr == nil {
			if err := r.ParseForm(); err != nil {
				u.renderActionError(w, r, &p, domain.Errorf(domain.CodeInvalid, "the form could not be read"))
				return
			}
			if err := checkCSRF(r, c.Value); err != nil {
				u.log.WarnContext(r.Context(), "ui: logout refused", "archon", p.ArchonID, "err", err)
				u.renderActionError(w, r, &p, err)
				return
			}
		}
		if err := u.auth.EndSession(r.Context(), c.Value); err != nil {
			u.log.ErrorContext(r.Context(), "ui logout: ending the session failed", "err", err)
			u.renderError(w, r, nil, err)
			return
		}
	}
	u.clearCookie(w, r)
	http.Redirect(w, r, Prefix+"/login?out=1", http.StatusSeeOther)
}

// limits are the session bounds of the UI's config.
func (u *UI) limits() auth.SessionLimits {
	return auth.SessionLimits{TTL: u.cfg.SessionTTL, Idle: u.cfg.SessionIdle}
}

func (u *UI) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: u.secure(r), SameSite: http.SameSiteStrictMode,
	})
}

func (u *UI) secure(r *http.Request) bool { return r.TLS != nil || u.cfg.SecureCookie }

// safeNext keeps a post-login redirect inside the UI: anything that is not
// a plain path under /ui (another host, a scheme, "//host", backslashes)
// becomes the dashboard.
func safeNext(next string) string {
	const home = Prefix + "/"
	if next == "" || strings.ContainsAny(next, "\\\r\n\t") || strings.HasPrefix(next, "//") {
		return home
	}
	uu, err := url.Parse(next)
	if err != nil || uu.Scheme != "" || uu.Host != "" || uu.User != nil {
		return home
	}
	// A path with dot segments (the browser would resolve "/ui/../v1") or
	// doubled slashes is not one the UI links to.
	clean := path.Clean(uu.Path)
	if strings.HasSuffix(uu.Path, "/") && clean != "/" {
		clean += "/"
	}
	if clean != uu.Path || clean != Prefix && !strings.HasPrefix(clean, home) {
		return home
	}
	return uu.RequestURI()
}

// checkQuery refuses a query string Go cannot parse whole (audit I4, as
// the API does): past 10,000 parameters, or with a bad escape, url.Values
// silently drops it, so a filter such as ?coven=… would turn into "no
// filter" and list everything.
func checkQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return domain.Errorf(domain.CodeInvalid, "query string: %v", err)
	}
	return nil
}
