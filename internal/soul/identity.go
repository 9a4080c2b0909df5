package soul

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// Files the agent keeps in its data directory.
const (
	KeyFile         = "soul.key"           // Ed25519 private key, PKCS#8 PEM, 0600
	FingerprintFile = "keeper.fingerprint" // pinned keeper CA fingerprint, written after the first welcome
	OutboxDir       = "outbox"             // results finished while disconnected
)

// LoadOrCreateKey reads the soul's Ed25519 key from dataDir, creating the
// directory (0700) and a new key (0600) when there is none.
func LoadOrCreateKey(dataDir string) (ed25519.PrivateKey, error) {
	path := filepath.Join(dataDir, KeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		return parseKey(path, b)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading soul key: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating soul key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding soul key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	// O_EXCL: two souls racing on one data dir must not end up with
	// different keys on disk and in memory.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return LoadOrCreateKey(dataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("writing soul key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing soul key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing soul key: %w", err)
	}
	return key, nil
}

func parseKey(path string, b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("soul key %s: no PEM block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("soul key %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("soul key %s: not an Ed25519 key", path)
	}
	return key, nil
}

// trust is how the agent authenticates the keeper.
type trust struct {
	tls         *tls.Config
	fingerprint string // signed into the handshake proof
	persist     bool   // write fingerprint to the data dir after the first welcome
}

// resolveTrust picks the keeper's trust anchor: a CA file, else an explicit
// fingerprint, else the join token's, else the one persisted at the first
// join. An explicit fingerprint that contradicts the join token's is an
// error.
func resolveTrust(cfg Config) (trust, error) {
	if cfg.CAFile != "" {
		c, err := tlsutil.CAFileClientConfig(cfg.CAFile)
		if err != nil {
			return trust{}, err
		}
		fp, err := tlsutil.CAFileFingerprint(cfg.CAFile)
		if err != nil {
			return trust{}, err
		}
		return trust{tls: c, fingerprint: fp}, nil
	}
	fp, persist := "", true
	if cfg.Fingerprint != "" {
		n, err := tlsutil.NormalizeFingerprint(cfg.Fingerprint)
		if err != nil {
			return trust{}, err
		}
		fp = n
	}
	if cfg.JoinToken != "" {
		_, tokFP, err := jointoken.Decode(cfg.JoinToken)
		if err != nil {
			return trust{}, fmt.Errorf("join token: %w", err)
		}
		if fp != "" && fp != tokFP {
			return trust{}, fmt.Errorf("the keeper fingerprint given (%s) differs from the join token's (%s)", fp, tokFP)
		}
		fp = tokFP
	}
	if fp == "" {
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, FingerprintFile))
		if errors.Is(err, os.ErrNotExist) {
			return trust{}, errors.New("no way to trust the keeper: give a join token, the keeper fingerprint or a CA file (after the first join the fingerprint is kept in the data directory)")
		}
		if err != nil {
			return trust{}, fmt.Errorf("reading pinned keeper fingerprint: %w", err)
		}
		if fp, err = tlsutil.NormalizeFingerprint(strings.TrimSpace(string(b))); err != nil {
			return trust{}, fmt.Errorf("pinned keeper fingerprint in %s: %w", cfg.DataDir, err)
		}
		persist = false
	}
	c, err := tlsutil.PinnedClientConfig(fp)
	if err != nil {
		return trust{}, err
	}
	return trust{tls: c, fingerprint: fp, persist: persist}, nil
}

// persistFingerprint keeps the pinned fingerprint so restarts need no token.
func persistFingerprint(dataDir, fp string) error {
	path := filepath.Join(dataDir, FingerprintFile)
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == fp {
		return nil
	}
	if err := writeFileAtomic(path, []byte(fp+"\n"), 0o600); err != nil {
		return fmt.Errorf("pinning keeper fingerprint: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
