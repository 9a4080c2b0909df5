package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// SettingSigningKey is the store setting where versions before the
// December 2026 hardening kept the signing key's seed. The key now lives
// in a key file (SPEC §10.2): New moves a key found here into the file and
// deletes the setting, so read access to the database no longer mints
// tokens (audit M6).
const SettingSigningKey = "auth.signing_key"

// KeyFileName is the signing key file's name in the data directory when
// auth.signing_key_file is not set.
const KeyFileName = "signing.key"

// keyPEMType is the PEM block of the key file: PKCS #8, as openssl writes.
const keyPEMType = "PRIVATE KEY"

// readKeyFile reads the Ed25519 key at path. It refuses a file that group
// or others may read or write: whoever reads it mints admin tokens.
// A missing file is os.ErrNotExist.
func readKeyFile(path string) (ed25519.PrivateKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("signing key file %s has mode %04o: only its owner may read it (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading signing key file: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != keyPEMType {
		return nil, fmt.Errorf("signing key file %s holds no PEM %q block", path, keyPEMType)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("signing key file %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key file %s holds a %T, not an Ed25519 key", path, k)
	}
	return key, nil
}

// writeKeyFile writes key to path, mode 0600, atomically and never over an
// existing file (a keeper sharing the file may have written it first):
// os.ErrExist then.
func writeKeyFile(path string, key ed25519.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding signing key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the signing key's directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".signing-key-*")
	if err != nil {
		return fmt.Errorf("writing signing key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err == nil {
		err = pem.Encode(tmp, &pem.Block{Type: keyPEMType, Bytes: der})
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing signing key file: %w", err)
		}
	} else {
		tmp.Close()
		return fmt.Errorf("writing signing key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return os.ErrExist
		}
		return fmt.Errorf("writing signing key file %s: %w", path, err)
	}
	return nil
}

// Init creates the signing key file at keyFile (0600). A key an older
// version left in the store is moved into the file instead of a new one
// being made. It fails with CodeConflict when the file already exists: a
// keeper is initialized once (keepers sharing a database share the file
// by copying it).
func Init(ctx context.Context, st store.Store, keyFile string) error {
	if keyFile == "" {
		return domain.Errorf(domain.CodeInvalid, "no signing key file given (auth.signing_key_file)")
	}
	if _, err := os.Stat(keyFile); err == nil {
		return domain.Errorf(domain.CodeConflict, "the signing key file %s already exists: this keeper is already initialized", keyFile)
	}
	if moved, err := migrateKey(ctx, st, keyFile); err != nil || moved {
		return err
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generating signing key: %w", err)
	}
	if err := writeKeyFile(keyFile, key); err != nil {
		if errors.Is(err, os.ErrExist) {
			return domain.Errorf(domain.CodeConflict, "the signing key file %s already exists: this keeper is already initialized", keyFile)
		}
		return err
	}
	return nil
}

// Initialized reports whether a signing key exists: the key file, or a
// key an older version left in st (which New moves into the file).
func Initialized(ctx context.Context, st store.Store, keyFile string) (bool, error) {
	if _, err := os.Stat(keyFile); err == nil {
		return true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("signing key file: %w", err)
	}
	_, err := st.GetSetting(ctx, SettingSigningKey)
	switch {
	case err == nil:
		return true, nil
	case domain.ErrorCode(err) == domain.CodeNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("reading signing key: %w", err)
	}
}

// migrateKey moves a signing key left in st by an older version into
// keyFile, then deletes it from st; the file is written (and read back)
// before the key leaves the database, so a crash in between loses
// nothing. When the file exists already (another keeper sharing the
// database moved it first) it must hold the same key. It reports whether
// st held a key.
func migrateKey(ctx context.Context, st store.Store, keyFile string) (bool, error) {
	seed, err := st.GetSetting(ctx, SettingSigningKey)
	switch {
	case domain.ErrorCode(err) == domain.CodeNotFound:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading signing key: %w", err)
	case len(seed) != ed25519.SeedSize:
		return false, fmt.Errorf("signing key setting %s has %d bytes, want %d", SettingSigningKey, len(seed), ed25519.SeedSize)
	}
	key := ed25519.NewKeyFromSeed(seed)
	if err := writeKeyFile(keyFile, key); err != nil && !errors.Is(err, os.ErrExist) {
		return true, fmt.Errorf("moving the signing key out of the database: %w", err)
	}
	onDisk, err := readKeyFile(keyFile)
	if err != nil {
		return true, fmt.Errorf("moving the signing key out of the database: %w", err)
	}
	if !onDisk.Equal(key) {
		return true, fmt.Errorf("the database still holds a signing key that differs from the one in %s: check auth.signing_key_file (keepers sharing a database share one key file)", keyFile)
	}
	if err := st.DeleteSetting(ctx, SettingSigningKey); err != nil {
		return true, fmt.Errorf("removing the signing key from the database: %w", err)
	}
	return true, nil
}
