package config

import "path/filepath"

// Auth configures token signing.
type Auth struct {
	// SigningKeyFile is the Ed25519 key signing Archon tokens (PEM, mode
	// 0600), created by `keeper init`; empty means signing.key in the data
	// directory. Keepers sharing a database share this file.
	SigningKeyFile string `yaml:"signing_key_file"`
	// UISessionTTL is the longest a web UI session lives, never past the
	// expiry of the token it was opened with (0 = 12h).
	UISessionTTL Duration `yaml:"ui_session_ttl"`
	// UISessionIdle ends a web UI session after this long without a
	// request (0 = 1h).
	UISessionIdle Duration `yaml:"ui_session_idle"`
}

// SigningKeyFile is the token signing key file: auth.signing_key_file, or
// signing.key in the data directory.
func (k Keeper) SigningKeyFile() string {
	if k.Auth.SigningKeyFile != "" {
		return k.Auth.SigningKeyFile
	}
	return filepath.Join(k.DataDir, "signing.key")
}
