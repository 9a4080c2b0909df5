package apiclient

import (
	"context"
	"net/http"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// ListKeepers lists the keepers sharing the Keeper's database, by id.
func (c *Client) ListKeepers(ctx context.Context) ([]apitypes.KeeperInfo, error) {
	var out []apitypes.KeeperInfo
	return out, c.Do(ctx, http.MethodGet, "/v1/keepers", nil, nil, &out)
}
