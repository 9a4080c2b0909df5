// Package api is the Operator API of the Keeper: JSON over HTTP, every /v1
// call authenticated with an Archon's bearer JWT, authorised by role, and
// (when it mutates) written to the audit log. It is the one place that maps
// domain error codes to HTTP statuses (errors.go).
//
// # Adding routes
//
// A route group is one file, routes_<group>.go, holding a method
//
//	func (s *Server) routesSouls(rt *Router) { rt.Handle("GET /v1/souls/{sid}", onPath(auth.PermRead, auth.ObjSoul, "sid"), s.getSoul) … }
//
// that registers itself in the file's init():
//
//	func init() { routeGroups = append(routeGroups, (*Server).routesSouls) }
//
// New has no list to edit. A group's dependencies are fields of Config (add
// yours next to the others); a group whose dependency is nil registers
// nothing, so partial keepers and tests stay possible. Handlers have the
// HandlerFunc signature: they return an error instead of writing one, and
// the Router authenticates, authorises (each route declares the permission
// it needs and on which object: a Need, decided by the one authorizer,
// auth.Authority.Decide), audits mutating calls, measures
// latency and renders errors for them. Every route must also be described
// in openapi.json (a test checks it).
package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/cloud"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/healthkeeper"
	"github.com/soulstack/soulstack/internal/install"
	"github.com/soulstack/soulstack/internal/notify"
	"github.com/soulstack/soulstack/internal/rules"
	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
)

// routeGroups are the route registration methods, each appended by its own
// file's init().
var routeGroups []func(*Server, *Router)

// Config holds the dependencies of the Operator API.
type Config struct {
	Store store.Store     // required
	Auth  *auth.Authority // required
	// Catalog serves /v1/services; nil leaves them out.
	Catalog *catalog.Catalog
	// Souls admits and rejects souls; nil means StoreSouls without
	// Disconnect.
	Souls SoulAdmin
	// Checker serves procedures, Checker tasks and schedules; nil leaves
	// them out.
	Checker *checker.Checker
	// Engine serves incarnations and runs; nil leaves them out.
	Engine *engine.Engine
	// Cloud destroys an incarnation's cloud instances (DELETE
	// /v1/incarnations/{name}?destroy=true); nil refuses that.
	Cloud *cloud.Manager
	// Secrets serves /v1/secrets (SPEC §10.5); nil leaves them out.
	Secrets *secrets.Store
	// Rules, when set, is told when Keeper-wide rules or pauses change;
	// Notifier sends notify test (nil: one built on Store and Secrets).
	Rules    *rules.Engine
	Notifier *notify.Notifier
	// Fingerprint is the SHA-256 fingerprint of the Keeper's CA, put into
	// every join token for the soul to pin; "" leaves POST /v1/join-tokens
	// out.
	Fingerprint string
	// Install serves GET /install.sh and GET /v1/soul/binary; nil leaves
	// them out.
	Install *install.Server
	// TLSPin is "sha256//<base64>" of the served certificate's public key,
	// told by GET /v1/version for `curl --pinnedpubkey`; "" tells none.
	TLSPin string
	// CheckerArchon is the name of the Archon whose tokens the Checker
	// calls the API with; only they may act on behalf of another Archon
	// (apitypes.HeaderOnBehalfOf). "" lets no one.
	CheckerArchon string
	// Load bounds the authenticated requests served at once (api.* in
	// keeper.yaml); the zero value sheds nothing.
	Load Load
	// KeeperID is this keeper's id (GET /v1/keepers marks it self).
	KeeperID string
	// Leader returns the id of the keeper that leads; nil: none is shown.
	Leader func(ctx context.Context) (string, error)
	// Health streams health transitions (GET
	// /v1/incarnations/{name}/health/events); nil answers it 503.
	// HealthStaleAfter is how long a silent host shows its last status
	// before stale (0 = healthkeeper.DefaultStaleAfter).
	Health           HealthEvents
	HealthStaleAfter time.Duration
	// Registry receives the API's metrics and is served at /metrics; nil
	// creates a private one.
	Registry *prometheus.Registry
	// StoreIntegrity returns the store's last failed integrity check, nil
	// when none failed; /readyz fails while it returns one. nil: none.
	StoreIntegrity func() error
	Logger         *slog.Logger // nil discards
}

// HealthEvents is the Keeper's health check service as the API sees it.
type HealthEvents interface {
	Subscribe(incarnation string) (events <-chan healthkeeper.Event, stop func())
}

// Server is the Operator API. Create it with New and serve Handler().
type Server struct {
	cfg     Config
	store   store.Store
	auth    *auth.Authority
	log     *slog.Logger
	reg     *prometheus.Registry
	metrics *metrics
	shed    *shedder
	mux     *http.ServeMux
	routes  []Route
	probe   writeProbe // /readyz's cached store write probe
}

// New builds the Server and registers every route group.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Auth == nil {
		return nil, errorf("api.New: Store and Auth are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	s := &Server{
		cfg:   cfg,
		store: cfg.Store,
		auth:  cfg.Auth,
		log:   cfg.Logger,
		reg:   cfg.Registry,
		mux:   http.NewServeMux(),
	}
	m, err := newMetrics(cfg.Registry, cfg.Store)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if s.shed, err = newShedder(cfg.Load, cfg.Registry); err != nil {
		return nil, err
	}
	rt := &Router{s: s}
	for _, g := range routeGroups {
		g(s, rt)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := s.allowed(r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.writeError(w, r, domain.Errorf(domain.CodeMethodNotAllowed, "%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		s.writeError(w, r, notFoundf("no route for %s %s", r.Method, r.URL.Path))
	})
	return s, nil
}

// allowed lists the methods a route serves r's path with, when r's method
// is not one of them (so the answer is 405 with Allow, not 404).
func (s *Server) allowed(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			out = append(out, m)
		}
	}
	return out
}

// Handler returns the HTTP handler of every route of the API.
func (s *Server) Handler() http.Handler { return s.mux }

// Registry returns the Prometheus registry served at /metrics, for other
// components to register their collectors in.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Routes lists the registered routes (pattern and decision), for
// documentation and tests.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// Mount serves h under pattern on the API's mux without authentication
// (the keeper mounts the UI and the soul stream this way, which do their
// own). It is measured like every other route.
func (s *Server) Mount(pattern string, h http.Handler) {
	s.mux.Handle(pattern, s.measure(h, false))
}

// Route is one registered route.
type Route struct {
	Pattern string // "POST /v1/souls/{sid}/accept"
	// Public routes need no token; the others need Permission on an
	// Object of that kind (or, when Listed, answer only what the caller
	// may read).
	Public     bool
	Permission auth.Permission
	Object     string
	Listed     bool
}

// HandlerFunc is an authenticated route handler. It writes the success
// response itself and returns an error for any failure, which the Router
// renders; p is the calling Archon.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, p auth.Principal) error

// Router registers routes on a Server.
type Router struct{ s *Server }

// Handle registers an authenticated route and the decision it needs.
func (rt *Router) Handle(pattern string, need Need, h HandlerFunc) {
	if need.objects == nil {
		panic("api: route " + pattern + " declares no authorization decision")
	}
	rt.s.routes = append(rt.s.routes, Route{Pattern: pattern, Permission: need.Perm, Object: need.Object, Listed: need.Listed})
	rt.s.mux.Handle(pattern, rt.s.measure(rt.s.shed.wrap(rt.s, pattern, rt.s.authenticated(need, h)), false))
}

// Public registers a route without authentication (health, metrics, the
// OpenAPI document). Use it for nothing that reveals or changes fleet data.
func (rt *Router) Public(pattern string, h http.Handler) {
	rt.s.routes = append(rt.s.routes, Route{Pattern: pattern, Public: true})
	rt.s.mux.Handle(pattern, rt.s.measure(h, true))
}

// Server returns the Server the router registers on.
func (rt *Router) Server() *Server { return rt.s }

// ping checks the store with the request's context.
func (s *Server) ping(ctx context.Context) error { return s.store.Ping(ctx) }
