package apiclient

import (
	"context"
	"net/http"
	"net/url"
)

// NextCursorHeader is the header in which a list route names the cursor of
// its next page (pass it as ?after=); absent on the last page.
const NextCursorHeader = "X-Next-Cursor"

// listAll reads every page of a list route: it follows the next-page
// cursor until the last page.
func listAll[T any](ctx context.Context, c *Client, path string, query url.Values) ([]T, error) {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	all := []T{}
	for {
		var page []T
		h, err := c.do(ctx, http.MethodGet, path, q, nil, &page)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		next := h.Get(NextCursorHeader)
		if next == "" || len(page) == 0 {
			return all, nil
		}
		q.Set("after", next)
	}
}
