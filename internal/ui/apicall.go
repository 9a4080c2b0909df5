package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// maxAPIAnswer bounds the answer of an in-process API call the UI reads.
const maxAPIAnswer = 4 << 20

// apiAnswer is what an in-process API call wrote.
type apiAnswer struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func (a *apiAnswer) Header() http.Header { return a.header }
func (a *apiAnswer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}
func (a *apiAnswer) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.body.Len()+len(b) > maxAPIAnswer {
		return 0, fmt.Errorf("ui: API answer larger than %d bytes", maxAPIAnswer)
	}
	return a.body.Write(b)
}

// callAPI performs an action through the Operator API, in process, as the
// session's Archon: the API takes the principal the session authenticated
// (auth.InProcess: no token travels, the session's cookie is not one),
// authorises by role, validates and audits exactly as for soulctl. body
// (nil for none) is sent as JSON; a 2xx answer is decoded into out (when
// not nil), any other answer becomes a domain error carrying the API's
// code and message.
func (u *UI) callAPI(ctx context.Context, orig *http.Request, method, path string, body, out any) error {
	p, ok := auth.FromContext(orig.Context())
	if !ok {
		return domain.Errorf(domain.CodeUnauthorized, "not signed in")
	}
	ctx = auth.InProcess(ctx, p)
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encoding the %s %s request: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return fmt.Errorf("building the %s %s request: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = orig.RemoteAddr
	req.Host = orig.Host
	if id := orig.Header.Get("X-Request-Id"); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	ans := &apiAnswer{header: http.Header{}}
	u.cfg.API.ServeHTTP(ans, req)
	if ans.status == 0 {
		ans.status = http.StatusOK
	}
	if ans.status >= 200 && ans.status < 300 {
		if out != nil && ans.body.Len() > 0 {
			if err := json.Unmarshal(ans.body.Bytes(), out); err != nil {
				return fmt.Errorf("reading the answer of %s %s: %w", method, path, err)
			}
		}
		return nil
	}
	var eb apitypes.ErrorBody
	if err := json.Unmarshal(ans.body.Bytes(), &eb); err != nil || eb.Error.Code == "" {
		return fmt.Errorf("%s %s: status %d", method, path, ans.status)
	}
	return &domain.Error{Code: domain.Code(eb.Error.Code), Message: eb.Error.Message}
}
