package relay

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// Relay rows carry the rendered work (secret input values included) and
// the soul's unmasked result through PostgreSQL. They are sealed with
// AES-256-GCM under Config.SealKey, which the keepers derive from the TLS
// key they share, so the database, its WAL and its backups never hold
// them in clear (audit note I6).

// sealMagic heads a sealed payload.
var sealMagic = []byte("SSR1")

// Additional data binding a sealed payload to its use.
var (
	adWork   = []byte("soulstack relay work")
	adResult = []byte("soulstack relay result")
)

type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("relay: the seal key has %d bytes, want 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// seal encrypts plain for the use ad names.
func (s *sealer) seal(plain, ad []byte) ([]byte, error) {
	out := make([]byte, len(sealMagic)+s.aead.NonceSize(), len(sealMagic)+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	copy(out, sealMagic)
	nonce := out[len(sealMagic):]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("sealing relayed data: %w", err)
	}
	return s.aead.Seal(out, nonce, plain, ad), nil
}

// open decrypts what seal made for ad; anything else is an error.
func (s *sealer) open(sealed, ad []byte) ([]byte, error) {
	n := len(sealMagic) + s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() || !bytes.Equal(sealed[:len(sealMagic)], sealMagic) {
		return nil, errors.New("relayed data is not sealed by a keeper of this database")
	}
	plain, err := s.aead.Open(nil, sealed[len(sealMagic):n], sealed[n:], ad)
	if err != nil {
		return nil, errors.New("relayed data does not open with this keeper's key (do the keepers share their TLS material?)")
	}
	return plain, nil
}
