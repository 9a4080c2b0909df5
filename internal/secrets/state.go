package secrets

import (
	"encoding/base64"
	"fmt"
)

// stateAD binds a sealed state value to its incarnation and key: a value
// copied to another key or incarnation does not open.
func stateAD(incarnation, key string) []byte {
	return []byte("soulstack state v1\x00" + incarnation + "\x00" + key)
}

// SealState seals the value (its JSON) of the state key declared secret:
// true in state_schema (SPEC §10.2) for the incarnation's sealed state:
// the base64 of the ciphertext, under the same key file as the store's
// secrets.
func (s *Store) SealState(incarnation, key string, value []byte) (string, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(value)+s.aead.Overhead())
	if err := randRead(nonce); err != nil {
		return "", fmt.Errorf("sealing state key %s of %s: %w", key, incarnation, err)
	}
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, value, stateAD(incarnation, key))), nil
}

// OpenState opens what SealState sealed.
func (s *Store) OpenState(incarnation, key, sealed string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	n := s.aead.NonceSize()
	if err != nil || len(b) < n+s.aead.Overhead() {
		return nil, fmt.Errorf("state key %s of %s: the sealed value is damaged", key, incarnation)
	}
	v, err := s.aead.Open(nil, b[:n], b[n:], stateAD(incarnation, key))
	if err != nil {
		return nil, fmt.Errorf("state key %s of %s does not open with this keeper's secrets key (is %s the key file it was sealed with?): %w", key, incarnation, KeyFileName, err)
	}
	return v, nil
}
