package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
)

// maxBody bounds every request body.
const maxBody = 4 << 20

// httpStatus is the one mapping of domain codes to HTTP statuses.
func httpStatus(c domain.Code) int {
	switch c {
	case domain.CodeInvalid:
		return http.StatusBadRequest
	case domain.CodeUnauthorized:
		return http.StatusUnauthorized
	case domain.CodeForbidden:
		return http.StatusForbidden
	case domain.CodeNotFound:
		return http.StatusNotFound
	case domain.CodeConflict:
		return http.StatusConflict
	case domain.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case domain.CodeUnprocessable:
		return http.StatusUnprocessableEntity
	case domain.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case domain.CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// writeError renders err as {"error": {code, message, details}} with the
// status of its code. Client errors (4xx) show the error's message with the
// context callers wrapped around it; server errors show a fixed message
// and are logged, so internals never reach the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := domain.ErrorCode(err)
	status := httpStatus(code)
	body := apitypes.ErrorDetail{Code: string(code), Message: clientMessage(err)}
	var de *domain.Error
	if errors.As(err, &de) {
		body.Details = de.Details
	}
	switch {
	case code == domain.CodeUnavailable:
		s.log.WarnContext(r.Context(), "store unavailable", "route", r.Pattern, "err", err)
		if body.Message == "" {
			body.Message = "the store is unavailable"
		}
	case status >= 500:
		s.log.ErrorContext(r.Context(), "request failed", "route", r.Pattern, "method", r.Method, "err", err)
		body.Message = "internal error"
		body.Details = nil
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="soulstack"`)
	}
	writeJSON(w, status, apitypes.ErrorBody{Error: body})
}

// clientMessage is err's text without the cause under its *domain.Error
// (which may be long, like every problem of a service, or internal); for
// a not-found error, the message of its *domain.Error alone.
func clientMessage(err error) string {
	msg := err.Error()
	var de *domain.Error
	if errors.As(err, &de) && de.Code == domain.CodeNotFound {
		// It names what is missing; the callers' context would only say
		// it again ("service x: service "x" does not exist").
		return de.Message
	}
	if errors.As(err, &de) && de.Err != nil {
		msg = strings.TrimSuffix(msg, ": "+de.Err.Error())
	}
	return msg
}

// writeJSON writes v as the JSON response body with status. A store
// record never crosses the API edge (handlers answer with apitypes): one
// that would is a bug, answered 500 rather than sent.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if t := storeRecordIn(reflect.TypeOf(v), map[reflect.Type]bool{}); t != "" {
		http.Error(w, `{"error":{"code":"internal","message":"a store record reached the API edge: `+t+`"}}`, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":{"code":"internal","message":"encoding response"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// bodyTooLarge is the 413 of a request body over limit bytes.
func bodyTooLarge(limit int64) error {
	return domain.Errorf(domain.CodeTooLarge, "request body is larger than the API's limit of %d MiB (%d bytes)", limit>>20, limit)
}

// decode reads the request body strictly into v: unknown fields, trailing
// data and a missing body are 400s that say what is wrong.
func decode(r *http.Request, v any) error {
	if r.Body == nil {
		return invalidf("request body required: send a JSON object")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return invalidf("request body required: send a JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return invalidf("request body is not valid JSON: it ends early")
		case errors.As(err, &mbe):
			return bodyTooLarge(mbe.Limit)
		case errors.As(err, &se):
			return invalidf("request body is not valid JSON at offset %d: %v", se.Offset, err)
		case errors.As(err, &te) && te.Type == reflect.TypeFor[apitypes.Duration]():
			return invalidf("request field %q must be a duration such as \"90m\", \"24h\" or \"30d\", or a number of seconds, not %s", te.Field, jsonValue(te.Value))
		case errors.As(err, &te) && te.Field == "":
			return invalidf("request body must be a JSON object, not %s", jsonValue(te.Value))
		case errors.As(err, &te):
			return invalidf("request field %q must be %s, not %s", te.Field, jsonType(te.Type), jsonValue(te.Value))
		default:
			return invalidf("request body: %v", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if dec.More() {
		return invalidf("request body has data after the JSON object")
	}
	return nil
}

// jsonType names the JSON a Go type decodes from, for messages (not
// "map[string]interface {}" or "apitypes.StartRunRequest").
func jsonType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		switch e := t.Elem(); e.Kind() {
		case reflect.String:
			return "a JSON array of strings"
		case reflect.Map, reflect.Struct:
			return "a JSON array of objects"
		}
		return "a JSON array"
	case reflect.Pointer:
		return jsonType(t.Elem())
	}
	return "another type"
}

// jsonValue names the JSON value encoding/json found ("array", "number
// 1e400", …) with an article.
func jsonValue(v string) string {
	switch {
	case v == "":
		return "that value"
	case strings.HasPrefix(v, "array"), strings.HasPrefix(v, "object"), strings.HasPrefix(v, "integer"):
		return "an " + v
	}
	return "a " + v
}

func invalidf(format string, args ...any) error {
	return domain.Errorf(domain.CodeInvalid, format, args...)
}

func notFoundf(format string, args ...any) error {
	return domain.Errorf(domain.CodeNotFound, format, args...)
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// storeRecordIn names the first internal/store type t is or holds ("" when
// none): the API answers with apitypes, which import no store.
func storeRecordIn(t reflect.Type, seen map[reflect.Type]bool) string {
	if t == nil || seen[t] {
		return ""
	}
	seen[t] = true
	if strings.HasSuffix(t.PkgPath(), "/internal/store") {
		return t.String()
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return storeRecordIn(t.Elem(), seen)
	case reflect.Map:
		if s := storeRecordIn(t.Key(), seen); s != "" {
			return s
		}
		return storeRecordIn(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if s := storeRecordIn(t.Field(i).Type, seen); s != "" {
				return s
			}
		}
	}
	return ""
}
