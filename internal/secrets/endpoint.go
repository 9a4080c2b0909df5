package secrets

import (
	"context"
	"fmt"
)

// endpointAD binds a sealed endpoint secret to its endpoint's name.
func endpointAD(name string) []byte { return []byte("soulstack endpoint v1\x00" + name) }

// SealEndpoint seals the secret of a notification endpoint (a webhook's
// HMAC key, an SMTP password) like a secret-store value (SPEC §17).
func (s *Store) SealEndpoint(name, value string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(value)+s.aead.Overhead())
	if err := randRead(nonce); err != nil {
		return nil, fmt.Errorf("sealing the secret of endpoint %s: %w", name, err)
	}
	return s.aead.Seal(nonce, nonce, []byte(value), endpointAD(name)), nil
}

// OpenEndpoint opens what SealEndpoint sealed.
func (s *Store) OpenEndpoint(name string, sealed []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return "", fmt.Errorf("endpoint %s: the sealed secret is damaged", name)
	}
	b, err := s.aead.Open(nil, sealed[:n], sealed[n:], endpointAD(name))
	if err != nil {
		return "", fmt.Errorf("the secret of endpoint %s does not open with this keeper's secrets key: %w", name, err)
	}
	return string(b), nil
}

// Values returns the clear values of every stored secret, for masking
// text that leaves the Keeper (notifications).
func (s *Store) Values(ctx context.Context) ([]string, error) {
	list, err := s.st.ListSecrets(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list))
	for _, sec := range list {
		v, err := s.Value(ctx, sec.Name)
		if err != nil {
			return nil, err
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out, nil
}
