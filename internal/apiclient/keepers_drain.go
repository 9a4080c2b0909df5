package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// DrainKeeper asks keeper id to move its souls to other keepers and
// refuse new ones until it restarts.
func (c *Client) DrainKeeper(ctx context.Context, id string) (apitypes.KeeperDrain, error) {
	var out apitypes.KeeperDrain
	return out, c.Do(ctx, http.MethodPost, "/v1/keepers/"+url.PathEscape(id)+"/drain", nil, nil, &out)
}
