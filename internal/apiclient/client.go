// Package apiclient is the typed Go client of the Keeper's Operator API,
// used by soulctl, the Checker and end-to-end tests. types.go holds the
// wire types the api package serves.
//
// # Adding methods
//
// A route group of the API gets one file here too (souls.go, services.go,
// …) with one method per route, each a thin call of Client.Do:
//
//	func (c *Client) GetSoul(ctx context.Context, sid string) (store.Soul, error) {
//		var s store.Soul
//		return s, c.Do(ctx, http.MethodGet, "/v1/souls/"+url.PathEscape(sid), nil, nil, &s)
//	}
//
// Errors of the API come back as *APIError, which unwraps to a
// *domain.Error of the same code, so domain.ErrorCode works on them.
package apiclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// Client calls the Operator API of one Keeper as one Archon.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
	ua    string
}

// Option configures a Client.
type Option func(*config) error

type config struct {
	hc      *http.Client
	tls     *tls.Config
	timeout time.Duration
	ua      string
}

// WithHTTPClient uses hc as is (its transport decides TLS).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error { c.hc = hc; return nil }
}

// WithFingerprint trusts exactly the Keeper CA with this SHA-256
// fingerprint (as in a join token or `keeper init`'s output), whatever the
// host name — for https:// keepers with the self-signed material.
func WithFingerprint(fp string) Option {
	return func(c *config) error {
		tc, err := tlsutil.PinnedClientConfig(fp)
		if err != nil {
			return err
		}
		c.tls = tc
		return nil
	}
}

// WithCAFile trusts the CA certificates in a PEM file, with standard host
// name verification.
func WithCAFile(path string) Option {
	return func(c *config) error {
		tc, err := tlsutil.CAFileClientConfig(path)
		if err != nil {
			return err
		}
		c.tls = tc
		return nil
	}
}

// WithTimeout bounds every call (default 60s; 0 means none: contexts only).
func WithTimeout(d time.Duration) Option {
	return func(c *config) error { c.timeout = d; return nil }
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(c *config) error { c.ua = ua; return nil }
}

// New returns a Client of the Keeper at baseURL (http://host:8080 or
// https://host:8080) authenticating with token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("keeper URL %q: want http://host:port or https://host:port", baseURL)
	}
	cfg := config{timeout: 60 * time.Second, ua: "soulstack-apiclient"}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	hc := cfg.hc
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if cfg.tls != nil {
			tc := cfg.tls.Clone()
			tc.NextProtos = []string{"h2", "http/1.1"}
			tr.TLSClientConfig = tc
			tr.ForceAttemptHTTP2 = true
		}
		hc = &http.Client{Transport: tr, Timeout: cfg.timeout}
	}
	return &Client{base: u, token: strings.TrimSpace(token), hc: hc, ua: cfg.ua}, nil
}

// BaseURL returns the Keeper's URL.
func (c *Client) BaseURL() string { return c.base.String() }

// APIError is an error answer of the API.
type APIError struct {
	Status  int             // HTTP status
	Code    string          // domain code: invalid, unauthorized, forbidden, not_found, …
	Message string          // human-readable message
	Details json.RawMessage // structured details, if any
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap exposes the error as a *domain.Error of the same code.
func (e *APIError) Unwrap() error {
	return &domain.Error{Code: domain.Code(e.Code), Message: e.Message, Details: e.Details}
}

// Problems decodes the details of an invalid-service error (nil when the
// details are something else).
func (e *APIError) Problems() []apitypes.Problem {
	var ps []apitypes.Problem
	if len(e.Details) == 0 || json.Unmarshal(e.Details, &ps) != nil {
		return nil
	}
	return ps
}

// Do calls method path (with query), sending in as JSON when not nil and
// decoding the answer into out when not nil. A non-2xx answer is an
// *APIError. Route files of this package build on it; other callers may use
// it for routes without a typed method yet.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	_, err := c.do(ctx, method, path, query, in, out)
	return err
}

// do is Do returning the answer's headers.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) (http.Header, error) {
	u := *c.base
	u.Path = strings.TrimRight(c.base.Path, "/") + path
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	setOnBehalfOf(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &domain.Error{Code: domain.CodeUnavailable, Message: fmt.Sprintf("keeper %s unreachable", c.base.Host), Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, decodeError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header, nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		b, err := io.ReadAll(resp.Body)
		*raw = b
		return resp.Header, err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("decoding %s %s answer: %w", method, path, err)
	}
	return resp.Header, nil
}

func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return &APIError{Status: resp.StatusCode, Code: string(codeOf(resp.StatusCode)), Message: msg}
	}
	return &APIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message, Details: eb.Error.Details}
}

// codeOf guesses the domain code of a non-JSON error answer (a proxy in
// front of the keeper, for example).
func codeOf(status int) domain.Code {
	switch status {
	case http.StatusBadRequest:
		return domain.CodeInvalid
	case http.StatusUnauthorized:
		return domain.CodeUnauthorized
	case http.StatusForbidden:
		return domain.CodeForbidden
	case http.StatusNotFound:
		return domain.CodeNotFound
	case http.StatusConflict:
		return domain.CodeConflict
	case http.StatusMethodNotAllowed:
		return domain.CodeMethodNotAllowed
	case http.StatusUnprocessableEntity:
		return domain.CodeUnprocessable
	case http.StatusRequestEntityTooLarge:
		return domain.CodeTooLarge
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return domain.CodeUnavailable
	default:
		return domain.CodeInternal
	}
}

// IsCode reports whether err is an API error (or any domain error) with
// the given code.
func IsCode(err error, code domain.Code) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code == string(code)
	}
	return err != nil && domain.ErrorCode(err) == code
}
