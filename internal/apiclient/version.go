package apiclient

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// Version returns the Keeper's version (public: no token needed).
func (c *Client) Version(ctx context.Context) (apitypes.KeeperVersion, error) {
	var v apitypes.KeeperVersion
	return v, c.Do(ctx, http.MethodGet, "/v1/version", nil, nil, &v)
}

// InstallScript returns the Keeper's install.sh (GET /install.sh), read
// over this client's trusted connection.
func (c *Client) InstallScript(ctx context.Context) ([]byte, error) {
	var raw json.RawMessage
	if err := c.Do(ctx, http.MethodGet, "/install.sh", nil, nil, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}
