package secrets

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// SealedEnvPrefix starts a cloud provider's env value sealed by
// SealProviderEnv; what follows is the base64 of the ciphertext.
const SealedEnvPrefix = "sealed:v1:"

// providerEnvAD binds a sealed env value to its provider and variable: a
// value copied to another provider or variable does not open.
func providerEnvAD(provider, key string) []byte {
	return []byte("soulstack cloud env v1\x00" + provider + "\x00" + key)
}

// IsSealedEnv reports whether v is a value SealProviderEnv made.
func IsSealedEnv(v string) bool { return strings.HasPrefix(v, SealedEnvPrefix) }

// SealProviderEnv seals the value of the env variable key of the cloud
// provider named provider (its API tokens, audit finding N3), under the
// same key file as the store's secrets: the database keeps only what this
// returns.
func (s *Store) SealProviderEnv(provider, key, value string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(value)+s.aead.Overhead())
	if err := randRead(nonce); err != nil {
		return "", fmt.Errorf("sealing env %s of cloud provider %s: %w", key, provider, err)
	}
	return SealedEnvPrefix + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(value), providerEnvAD(provider, key))), nil
}

// OpenProviderEnv opens what SealProviderEnv sealed.
func (s *Store) OpenProviderEnv(provider, key, sealed string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, SealedEnvPrefix))
	n := s.aead.NonceSize()
	if !IsSealedEnv(sealed) || err != nil || len(b) < n+s.aead.Overhead() {
		return "", fmt.Errorf("env %s of cloud provider %s: the sealed value is damaged; set the provider again", key, provider)
	}
	v, err := s.aead.Open(nil, b[:n], b[n:], providerEnvAD(provider, key))
	if err != nil {
		return "", fmt.Errorf("env %s of cloud provider %s does not open with this keeper's secrets key (is %s the key file it was sealed with?): %w", key, provider, KeyFileName, err)
	}
	return string(v), nil
}
