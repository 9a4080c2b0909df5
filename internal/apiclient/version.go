package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
)

// KeeperVersion answers GET /v1/version: the Keeper's build, and the pin
// of its TLS certificate's public key for `curl --pinnedpubkey` (how a new
// host fetches install.sh without trusting anything else).
type KeeperVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// TLSPin is "sha256//<base64>" of the served certificate's public key
	// ("" when the keeper has none to tell).
	TLSPin string `json:"tls_pin,omitempty"`
}

// Version returns the Keeper's version (public: no token needed).
func (c *Client) Version(ctx context.Context) (KeeperVersion, error) {
	var v KeeperVersion
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
