// Package ui is the Keeper's web UI at /ui (SPEC §12): server-rendered
// pages (html/template, assets embedded with go:embed, a
// little vanilla JavaScript for live run updates) over the store.
//
// Every page needs a signed-in session; any role may read. The Archon's
// token is entered once on the login page, which opens a server-side
// session (auth.StartSession, stored hashed, with an expiry and an idle
// timeout) whose random id is kept in an HttpOnly, SameSite=Strict cookie
// (Secure when the request came over TLS). The token never goes into the
// cookie, and the cookie is no token: the API refuses it. The session and
// its token are re-checked on every request, so logout, revoking the
// token or disabling the Archon ends the session at once, on every keeper.
// State changes are POSTs behind http.CrossOriginProtection: login,
// logout, and the actions (csrf.go, actions.go), which also need the
// session's CSRF token and a same-origin Origin, and which call the
// Operator API in process as the session's Archon (auth.InProcess), so the
// API authorises (by role), validates and audits them; pages hide the
// actions the Archon's role cannot use. Pages are served with a strict
// Content-Security-Policy (no inline script or style).
//
// Secrets: the store holds secret inputs already masked, and the UI never
// shows join tokens, API token records or soul keys.
package ui

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// Prefix is the path the UI is served under.
const Prefix = "/ui"

// Authenticator opens, checks and ends the UI's server-side sessions;
// *auth.Authority implements it.
type Authenticator interface {
	StartSession(ctx context.Context, bearer string, lim auth.SessionLimits) (auth.Session, error)
	AuthenticateSession(ctx context.Context, id string, lim auth.SessionLimits) (auth.Principal, error)
	EndSession(ctx context.Context, id string) error
}

// Config holds the UI's dependencies.
type Config struct {
	Store store.Store   // required
	Auth  Authenticator // required
	// Events pushes live progress of runs executing on this keeper to the
	// run page (see Subscriber); nil leaves the page polling the store.
	Events Events
	// SecureCookie forces the Secure attribute on the session cookie even
	// for plain-HTTP requests (TLS terminated by a proxy in front of the
	// keeper). Requests that arrive over TLS always get it.
	SecureCookie bool
	// SessionTTL is the longest a session lives (never past its token's
	// expiry); 0 means auth.DefaultSessionTTL.
	SessionTTL time.Duration
	// SessionIdle ends a session that made no request for this long; 0
	// means auth.DefaultSessionIdle.
	SessionIdle time.Duration
	// PollInterval is how often a live page refreshes from the store while
	// its run or task is unfinished; 0 means 2s.
	PollInterval time.Duration
	// SoulsPageSize is how many souls the souls list shows per page; 0
	// means 100.
	SoulsPageSize int
	// API is the Operator API's handler. The UI's action forms call it in
	// process as the session's Archon, so every action is authorised,
	// validated and audited exactly as from soulctl; nil makes the UI
	// read-only.
	API http.Handler
	// Services opens a service's DSL at a commit (the run form reads a
	// scenario's typed input); nil: no run form.
	Services Services
	// TLSPin is "sha256//<base64>" of the keeper's certificate key, put in
	// the install.sh one-liner shown with a new join token; "" omits it.
	TLSPin string
	// HealthStaleAfter is how long a silent host shows its last health
	// status before stale (0 = healthkeeper.DefaultStaleAfter).
	HealthStaleAfter time.Duration
	Logger           *slog.Logger     // nil discards
	Now              func() time.Time // nil means time.Now (tests)
}

// UI serves the web UI. Create it with New.
type UI struct {
	cfg     Config
	store   store.Store
	auth    Authenticator
	log     *slog.Logger
	now     func() time.Time
	pages   *pages
	handler http.Handler
}

// New builds the UI: it parses the embedded templates and registers the
// routes.
func New(cfg Config) (*UI, error) {
	if cfg.Store == nil || cfg.Auth == nil {
		return nil, errors.New("ui.New: Store and Auth are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SoulsPageSize <= 0 {
		cfg.SoulsPageSize = 100
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	u := &UI{cfg: cfg, store: cfg.Store, auth: cfg.Auth, log: cfg.Logger, now: cfg.Now}
	p, err := parsePages(u.funcs())
	if err != nil {
		return nil, err
	}
	u.pages = p
	u.handler = u.routes()
	return u, nil
}

// Handler serves every path under /ui (and /ui itself, redirected to /ui/).
// It expects the full request path: mount it on the keeper's mux at "/ui/"
// and "/ui", not behind http.StripPrefix.
func (u *UI) Handler() http.Handler { return u.handler }

// routes registers every page. Pages go through u.page (authenticated);
// only the login page, its POST and the static assets are public.
func (u *UI) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix+"/static/", u.static())
	mux.HandleFunc("GET "+Prefix+"/login", u.loginForm)
	mux.HandleFunc("POST "+Prefix+"/login", u.login)
	mux.HandleFunc("POST "+Prefix+"/logout", u.logout)
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusMovedPermanently)
	})

	mux.Handle("GET "+Prefix+"/{$}", u.page(u.dashboard))
	mux.Handle("GET "+Prefix+"/souls", u.page(u.souls))
	mux.Handle("GET "+Prefix+"/souls/{sid}", u.page(u.soul))
	mux.Handle("GET "+Prefix+"/services", u.page(u.services))
	mux.Handle("GET "+Prefix+"/services/{name}", u.page(u.service))
	mux.Handle("GET "+Prefix+"/incarnations", u.page(u.incarnations))
	mux.Handle("GET "+Prefix+"/incarnations/{name}", u.page(u.incarnation))
	mux.Handle("GET "+Prefix+"/runs", u.page(u.runs))
	mux.Handle("GET "+Prefix+"/runs/{id}", u.page(u.run))
	mux.Handle("GET "+Prefix+"/runs/{id}/hosts/{sid}", u.page(u.runHost))
	mux.Handle("GET "+Prefix+"/runs/{id}/failed", u.page(u.runFailed))
	mux.Handle("GET "+Prefix+"/runs/{id}/live", u.fragment(u.runLive))
	mux.Handle("GET "+Prefix+"/runs/{id}/events", u.fragment(u.runEvents))
	mux.Handle("GET "+Prefix+"/rules", u.page(u.rulesPage))
	mux.Handle("GET "+Prefix+"/procedures", u.page(u.procedures))
	mux.Handle("GET "+Prefix+"/procedures/{name}", u.page(u.procedure))
	mux.Handle("GET "+Prefix+"/tasks", u.page(u.tasks))
	mux.Handle("GET "+Prefix+"/tasks/{id}", u.page(u.task))
	mux.Handle("GET "+Prefix+"/tasks/{id}/live", u.fragment(u.taskLive))
	mux.Handle("GET "+Prefix+"/schedules", u.page(u.schedules))
	u.registerActions(mux)
	mux.Handle(Prefix+"/", u.page(u.notFound))

	return securityHeaders(http.NewCrossOriginProtection().Handler(mux))
}

// securityHeaders sets the headers every UI response carries: a CSP that
// allows only the UI's own scripts and styles, no framing, no referrer, no
// sniffing.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		// same-origin: a form post carries its real Origin (no-referrer would
		// send "Origin: null"), other sites get no referrer.
		hd.Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}
