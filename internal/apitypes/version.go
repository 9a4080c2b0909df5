package apitypes

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
