package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
)

// RequestIDHeader carries the request id: the client's when it sends a
// sane one, otherwise one the keeper makes. The answer always carries it,
// and the access log and any error log of the request name it.
const RequestIDHeader = "X-Request-Id"

// saneRequestID is what a client-sent request id may look like (it lands
// in logs, so nothing that could forge a log line).
var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

type requestIDKey struct{}

// RequestID returns the request id of ctx ("" outside a request).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID gives r a request id (see RequestIDHeader) and sets it on
// the answer.
func withRequestID(w http.ResponseWriter, r *http.Request) *http.Request {
	if id := RequestID(r.Context()); id != "" {
		return r
	}
	id := r.Header.Get(RequestIDHeader)
	if !saneRequestID.MatchString(id) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	w.Header().Set(RequestIDHeader, id)
	return r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
}

// Recover serves h and turns a panic in it into a logged error and a 500
// (SPEC §14): logged at error level with the request id, the route and the
// stack; answered with the API's JSON error when nothing was written yet
// (otherwise the answer is cut where it was). http.ErrAbortHandler keeps
// its meaning (abort the answer silently). Every route of the Server is
// served through it; the keeper wraps its other handlers with it too.
func Recover(log *slog.Logger, h http.Handler) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = withRequestID(w, r)
		sw := asRecorder(w)
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.LogAttrs(r.Context(), slog.LevelError, "panic serving a request",
				slog.String("request_id", RequestID(r.Context())), slog.String("method", r.Method),
				slog.String("route", r.Pattern), slog.String("path", r.URL.Path),
				slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
			if sw.written {
				return
			}
			sw.status = http.StatusInternalServerError
			writeJSON(sw, http.StatusInternalServerError, apitypes.ErrorBody{Error: apitypes.ErrorDetail{
				Code: string(domain.CodeInternal), Message: "internal error (request " + RequestID(r.Context()) + ")"}})
		}()
		h.ServeHTTP(sw, r)
	})
}
