// Package jointoken encodes the join token an Archon hands to a new soul:
// the token's secret and the fingerprint of the Keeper CA the soul must pin,
// in one copy-pasteable string "SSJ1.<base64url secret>.<hex fingerprint>".
// The Keeper stores only Hash(secret).
package jointoken

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Prefix marks version 1 of the token format.
const Prefix = "SSJ1"

// SecretSize is the length of secrets made by NewSecret.
const SecretSize = 32

// minSecret is the shortest secret Decode accepts.
const minSecret = 16

// ErrMalformed is returned (wrapped) by Decode for a string that is not a
// join token.
var ErrMalformed = errors.New("malformed join token")

// NewSecret returns SecretSize random bytes.
func NewSecret() ([]byte, error) {
	b := make([]byte, SecretSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generating join token secret: %w", err)
	}
	return b, nil
}

// Encode builds the token string from a secret and the keeper CA
// fingerprint (64 hex digits, as tlsutil.Fingerprint returns it).
func Encode(secret []byte, fingerprint string) string {
	return Prefix + "." + base64.RawURLEncoding.EncodeToString(secret) + "." + strings.ToLower(fingerprint)
}

// Decode splits a token string into its secret and fingerprint.
func Decode(s string) (secret []byte, fingerprint string, err error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 3 || parts[0] != Prefix {
		return nil, "", fmt.Errorf("%w: want %s.<secret>.<fingerprint>", ErrMalformed, Prefix)
	}
	secret, err = base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(secret) < minSecret {
		return nil, "", fmt.Errorf("%w: bad secret", ErrMalformed)
	}
	fp := strings.ToLower(parts[2])
	if b, err := hex.DecodeString(fp); err != nil || len(b) != sha256.Size {
		return nil, "", fmt.Errorf("%w: bad keeper fingerprint", ErrMalformed)
	}
	return secret, fp, nil
}

// Hash is what the store keeps of a secret (store.JoinToken.SecretHash).
func Hash(secret []byte) []byte {
	sum := sha256.Sum256(secret)
	return sum[:]
}
