package config

import "path/filepath"

// Auth configures token signing.
type Auth struct {
	// SigningKeyFile is the Ed25519 key signing Archon tokens (PEM, mode
	// 0600), created by `keeper init`; empty means signing.key in the data
	// directory. Keepers sharing a database share this file.
	SigningKeyFile string `yaml:"signing_key_file"`
}

// SigningKeyFile is the token signing key file: auth.signing_key_file, or
// signing.key in the data directory.
func (k Keeper) SigningKeyFile() string {
	if k.Auth.SigningKeyFile != "" {
		return k.Auth.SigningKeyFile
	}
	return filepath.Join(k.DataDir, "signing.key")
}
