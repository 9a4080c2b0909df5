// Package secrets is the Keeper's secret store (SPEC §10.5): values are
// sealed with XChaCha20-Poly1305 under a key kept in a file beside the
// token signing key (never in the database), so a copy of the database —
// a dump, a replica, a backup of the SQLite file — holds no value in
// clear. Values are opened only on the Keeper, when work is rendered.
package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// KeyFileName is the secrets key file's name, in the directory of the
// signing key file.
const KeyFileName = "secrets.key"

// KeyFile is the secrets key file that belongs beside signingKeyFile.
func KeyFile(signingKeyFile string) string {
	return filepath.Join(filepath.Dir(signingKeyFile), KeyFileName)
}

// LoadOrCreateKey reads the key at path, creating it (mode 0600) when it
// does not exist yet. Keepers sharing a database share the file, as they
// share the signing key: a second keeper racing to create it reads the
// first one's. A file group or others may read is refused.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	key = make([]byte, chacha20poly1305.KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generating the secrets key: %w", err)
	}
	if err := writeKey(path, key); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return readKey(path)
}

func readKey(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets key file %s has mode %04o: only its owner may read it (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading secrets key file: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != chacha20poly1305.KeySize {
		return nil, fmt.Errorf("secrets key file %s does not hold a base64 %d-byte key", path, chacha20poly1305.KeySize)
	}
	return key, nil
}

// writeKey writes key to path atomically, never over an existing file
// (os.ErrExist then).
func writeKey(path string, key []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the secrets key's directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".secrets-key-*")
	if err != nil {
		return fmt.Errorf("writing secrets key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing secrets key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return os.ErrExist
		}
		return fmt.Errorf("writing secrets key file %s: %w", path, err)
	}
	return nil
}
