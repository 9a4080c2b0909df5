package apiclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
)

// OpenStream GETs a streaming route (Server-Sent Events such as
// /v1/runs/{apply_id}/events) and returns its body for the caller to read
// and close. A non-2xx answer is an *APIError. The Client's timeout, when
// set, bounds the whole stream: callers reconnect when it ends.
func (c *Client) OpenStream(ctx context.Context, path string, query url.Values) (io.ReadCloser, error) {
	u := *c.base
	u.Path = strings.TrimRight(c.base.Path, "/") + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.ua)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	setOnBehalfOf(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &domain.Error{Code: domain.CodeUnavailable, Message: fmt.Sprintf("keeper %s unreachable", c.base.Host), Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp.Body, nil
}
