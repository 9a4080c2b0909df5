package secrets

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"regexp"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// MaxValueSize bounds one secret's value.
const MaxValueSize = 64 << 10

var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`)

// ValidName fails with CodeInvalid unless name is a secret name: a letter,
// then letters, digits, '_', '.', '-'; at most 128 characters.
func ValidName(name string) error {
	if !namePattern.MatchString(name) {
		return domain.Errorf(domain.CodeInvalid, "secret name %q: use a letter, then letters, digits, '_', '.', '-' (at most 128)", name)
	}
	return nil
}

// Store seals values into the Keeper's store and opens them again.
type Store struct {
	st   store.Store
	aead cipher.AEAD
}

// New returns a Store sealing with key (32 bytes, from LoadOrCreateKey).
func New(st store.Store, key []byte) (*Store, error) {
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return &Store{st: st, aead: aead}, nil
}

// ad binds a ciphertext to its secret's name: a row copied under another
// name does not open.
func ad(name string) []byte { return []byte("soulstack secret v1\x00" + name) }

func randRead(b []byte) error {
	_, err := rand.Read(b)
	return err
}

func (s *Store) seal(name, value string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(value)+s.aead.Overhead())
	if err := randRead(nonce); err != nil {
		return nil, fmt.Errorf("sealing secret %s: %w", name, err)
	}
	return s.aead.Seal(nonce, nonce, []byte(value), ad(name)), nil
}

func (s *Store) open(name string, sealed []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return "", fmt.Errorf("secret %s: the stored value is truncated", name)
	}
	b, err := s.aead.Open(nil, sealed[:n], sealed[n:], ad(name))
	if err != nil {
		return "", fmt.Errorf("secret %s does not open with this keeper's secrets key (is %s the key file it was set with?): %w", name, KeyFileName, err)
	}
	return string(b), nil
}

// Set stores value under name, sealed; owner is the Archon setting it
// (kept from the first set). A new secret belongs to the keeper (every
// scenario may read it); an existing one keeps its scope.
func (s *Store) Set(ctx context.Context, name, value, owner string) error {
	kind, scope := store.ScopeKeeper, ""
	if rec, err := s.st.GetSecret(ctx, name); err == nil {
		kind, scope = rec.ScopeKind, rec.Scope
	} else if domain.ErrorCode(err) != domain.CodeNotFound {
		return err
	}
	return s.SetScoped(ctx, name, value, owner, kind, scope)
}

// SetScoped is Set with the secret's scope (issue 34): ScopeKeeper, or
// ScopeService / ScopeIncarnation and its name — only that service's or
// incarnation's scenarios may read it.
func (s *Store) SetScoped(ctx context.Context, name, value, owner, scopeKind, scope string) error {
	switch scopeKind {
	case store.ScopeKeeper:
		scope = ""
	case store.ScopeService, store.ScopeIncarnation:
		if scope == "" {
			return domain.Errorf(domain.CodeInvalid, "secret %s: a %s scope needs a name", name, scopeKind)
		}
	default:
		return domain.Errorf(domain.CodeInvalid, "secret %s: scope %q: use keeper, service:NAME or incarnation:NAME", name, scopeKind)
	}
	if err := ValidName(name); err != nil {
		return err
	}
	if value == "" {
		return domain.Errorf(domain.CodeInvalid, "secret %s: the value is empty", name)
	}
	if len(value) > MaxValueSize {
		return domain.Errorf(domain.CodeInvalid, "secret %s: the value has %d bytes, more than %d", name, len(value), MaxValueSize)
	}
	sealed, err := s.seal(name, value)
	if err != nil {
		return err
	}
	return s.st.PutSecret(ctx, store.Secret{Name: name, Ciphertext: sealed, Owner: owner, ScopeKind: scopeKind, Scope: scope})
}

// Readable reports whether a scenario of incarnation (of service) may
// read the secret name: a keeper secret is everyone's, a service's only its
// incarnations', an incarnation's only its own. The error says which scope
// the secret belongs to.
func (s *Store) Readable(ctx context.Context, name, service, incarnation string) error {
	rec, err := s.st.GetSecret(ctx, name)
	if err != nil {
		return err
	}
	switch rec.ScopeKind {
	case "", store.ScopeKeeper:
		return nil
	case store.ScopeService:
		if rec.Scope == service {
			return nil
		}
	case store.ScopeIncarnation:
		if rec.Scope == incarnation {
			return nil
		}
	}
	return domain.Errorf(domain.CodeForbidden, "secret %q belongs to %s:%s: incarnation %s (service %s) may not read it", name, rec.ScopeKind, rec.Scope, incarnation, service)
}

// Value opens the secret name. Only the Keeper calls it, when it renders
// work; no route returns what it gives.
func (s *Store) Value(ctx context.Context, name string) (string, error) {
	rec, err := s.st.GetSecret(ctx, name)
	if err != nil {
		return "", err
	}
	return s.open(name, rec.Ciphertext)
}

// List lists the secrets' names, owners and times.
func (s *Store) List(ctx context.Context) ([]store.Secret, error) {
	return s.st.ListSecrets(ctx)
}

// Delete removes the secret name.
func (s *Store) Delete(ctx context.Context, name string) error {
	return s.st.DeleteSecret(ctx, name)
}

// Exists reports whether the secret name is set.
func (s *Store) Exists(ctx context.Context, name string) (bool, error) {
	_, err := s.st.GetSecret(ctx, name)
	switch {
	case err == nil:
		return true, nil
	case domain.ErrorCode(err) == domain.CodeNotFound:
		return false, nil
	}
	return false, err
}
