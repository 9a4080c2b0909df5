package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/cloud"
)

// authenticated wraps h: it authenticates the bearer token, asks the
// authorizer for the route's decision (need),
// buffers the body of a mutating call for the audit log, runs h, renders its
// error and appends the audit entry.
func (s *Server) authenticated(need Need, h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The keeper's own UI calls in process for a session it has
		// authenticated (auth.InProcess); everyone else sends a token.
		p, inProcess := auth.InProcessPrincipal(r.Context())
		if !inProcess {
			var err error
			if p, err = s.auth.Authenticate(r.Context(), r.Header.Get("Authorization")); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		caller := p
		p, via, err := s.delegate(r.Context(), p, r.Header.Get(apitypes.HeaderOnBehalfOf))
		if err != nil {
			// Refused before anything ran; audited under the caller when
			// it would have changed something.
			s.writeError(w, r, err)
			if mutating(r.Method) {
				s.audit(r, caller, &reqState{extra: map[string]any{"on_behalf_of": r.Header.Get(apitypes.HeaderOnBehalfOf)}}, http.StatusForbidden, nil)
			}
			return
		}
		ctx := auth.WithPrincipal(r.Context(), p)
		st, ok := ctx.Value(reqStateKey{}).(*reqState)
		if !ok {
			st = &reqState{}
			ctx = context.WithValue(ctx, reqStateKey{}, st)
		}
		st.archon = p.ArchonID
		if inProcess && via == "" {
			via = "ui session"
		}
		if via != "" {
			if st.extra == nil {
				st.extra = map[string]any{}
			}
			st.extra["via"] = via
		}
		r = r.WithContext(ctx)

		var body []byte
		audited := mutating(r.Method)
		if audited && r.Body != nil {
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					err = bodyTooLarge(mbe.Limit)
				} else {
					err = invalidf("reading request body: %v", err)
				}
				s.writeError(w, r, err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		} else if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}

		sw := asRecorder(w)
		if err := s.authorize(r, p, need); err != nil {
			s.writeError(sw, r, err)
		} else if err := checkQuery(r); err != nil {
			s.writeError(sw, r, err)
		} else if err := h(sw, r, p); err != nil {
			s.writeError(sw, r, err)
		}
		if audited {
			s.audit(r, p, st, sw.status, body)
		}
	})
}

// audit appends the audit entry of one mutating call, refused and failed
// calls included. An audit failure is logged: the call has already happened.
func (s *Server) audit(r *http.Request, p auth.Principal, st *reqState, status int, body []byte) {
	summary := map[string]any{}
	if strings.HasPrefix(r.Pattern, "PUT /v1/secrets/") {
		// A secret's value is never audited, whatever the body looks
		// like and whether the call was refused or not.
		body = nil
	}
	if len(body) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(body, &obj); err == nil {
			summary = obj
		} else {
			summary["body_bytes"] = len(body)
		}
	}
	if r.Pattern == "PUT /v1/cloud/providers/{name}" {
		// Env values of a provider are its platform credentials, masked
		// whether the call was refused before its handler ran or not.
		if cfg, ok := summary["config"].(map[string]any); ok {
			summary["config"] = cloud.MaskConfig(cfg)
		}
	}
	for k, v := range st.fields {
		old, ok := summary[k]
		switch {
		case !ok:
		case v == maskValues:
			summary[k] = maskedValues(old)
		default:
			summary[k] = v
		}
	}
	for k, v := range st.extra {
		summary[k] = v
	}
	summary["status"] = status
	target := st.target
	if target == "" {
		target = pathTarget(r)
	}
	// The request may be over (client gone); the entry must still land.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := s.auth.Record(ctx, p, r.Pattern, target, summary); err != nil {
		s.log.ErrorContext(ctx, "audit entry lost", "action", r.Pattern, "target", target, "archon", p.ArchonID, "err", err)
	}
}

// pathTarget is the default audit target: the values of the pattern's
// wildcards joined by "/" ("h1" for /v1/souls/{sid}/accept).
func pathTarget(r *http.Request) string {
	var vals []string
	for _, seg := range strings.Split(r.Pattern, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			name := strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}")
			name = strings.TrimSuffix(name, "...")
			vals = append(vals, r.PathValue(name))
		}
	}
	return strings.Join(vals, "/")
}

// checkQuery refuses a query string Go cannot parse whole (audit I4): past
// 10,000 parameters, or with a bad escape, url.Values silently drops it, so
// a filter would turn into "no filter" and list everything.
func checkQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return invalidf("query string: %v", err)
	}
	return nil
}

func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// reqState is per-request data handlers hand back to the middleware.
type reqState struct {
	target string
	archon string
	// fields replace fields of the request body in the audit summary.
	fields map[string]any
	// extra are added to the audit summary (what the handler did).
	extra map[string]any
}

type reqStateKey struct{}

// SetAuditTarget names the object a mutating call acted on when the path
// does not (for example the id of a created archon). Route groups in other
// files use it too.
func SetAuditTarget(r *http.Request, target string) {
	if st, ok := r.Context().Value(reqStateKey{}).(*reqState); ok {
		st.target = target
	}
}

// SetAuditField replaces a field of the request body in the call's audit
// summary (a field the body does not have is not added). Handlers use it
// for values only they know to be secret, such as the secret inputs of a
// scenario, which auth.Mask cannot tell by their names.
func SetAuditField(r *http.Request, key string, value any) {
	if st, ok := r.Context().Value(reqStateKey{}).(*reqState); ok {
		if st.fields == nil {
			st.fields = map[string]any{}
		}
		st.fields[key] = value
	}
}

// AddAuditField adds a field to the call's audit summary: what the
// handler found or did that the request does not say (the incarnations a
// deleted soul left, say).
func AddAuditField(r *http.Request, key string, value any) {
	if st, ok := r.Context().Value(reqStateKey{}).(*reqState); ok {
		if st.extra == nil {
			st.extra = map[string]any{}
		}
		st.extra[key] = value
	}
}

// maskValues, given to SetAuditField, masks every value of a JSON object
// field of the request body (or the whole field when it is not an object).
var maskValues = &struct{ _ byte }{}

// MaskAuditValues masks every value of the JSON object under key in the
// call's audit summary, keeping its keys: what a handler sets for a field
// that may hold secrets before it can tell which (refused calls included,
// even those whose body does not decode).
func MaskAuditValues(r *http.Request, key string) { SetAuditField(r, key, maskValues) }

func maskedValues(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return auth.Masked
	}
	out := make(map[string]any, len(m))
	for k := range m {
		out[k] = auth.Masked
	}
	return out
}

// measure records latency by route and status and logs the request (at
// debug level when quiet: probes and scrapes) with its request id; a panic
// in h is recovered into a 500 (Recover).
func (s *Server) measure(h http.Handler, quiet bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r = withRequestID(w, r)
		st := &reqState{}
		r = r.WithContext(context.WithValue(r.Context(), reqStateKey{}, st))
		sw := asRecorder(w)
		Recover(s.log, h).ServeHTTP(sw, r)
		d := time.Since(start)
		route := r.Pattern
		if route == "" || route == "/" {
			route = "unmatched"
		}
		s.metrics.observe(route, sw.status, d)
		level := slog.LevelInfo
		if quiet {
			level = slog.LevelDebug
		}
		if sw.status >= 500 {
			level = slog.LevelWarn
		}
		s.log.LogAttrs(r.Context(), level, "http request",
			slog.String("request_id", RequestID(r.Context())), slog.String("client", r.RemoteAddr),
			slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
			slog.Int("status", sw.status), slog.Duration("duration", d), slog.String("archon", st.archon))
	})
}
