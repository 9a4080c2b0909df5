package auth

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var archonName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,62}$`)

// CreateArchon creates an Archon with a unique name and the given role.
func (a *Authority) CreateArchon(ctx context.Context, name string, role Role) (store.Archon, error) {
	if !archonName.MatchString(name) {
		return store.Archon{}, domain.Errorf(domain.CodeInvalid,
			"archon name %q is invalid: use 1-63 letters, digits, '_', '.', '@' or '-', starting with a letter or digit", name)
	}
	if !role.Valid() {
		return store.Archon{}, domain.Errorf(domain.CodeInvalid, "unknown role %q: use admin, operator, auditor, viewer or none (custom roles are given by grants)", role)
	}
	existing, err := a.st.ListArchons(ctx)
	if err != nil {
		return store.Archon{}, fmt.Errorf("listing archons: %w", err)
	}
	for _, x := range existing {
		if x.Name == name {
			return store.Archon{}, domain.Errorf(domain.CodeConflict, "archon %q already exists", name)
		}
	}
	ar := store.Archon{ID: uuid.NewString(), Name: name, Role: string(role), CreatedAt: a.now().UTC().Truncate(time.Second)}
	if err := a.st.CreateArchon(ctx, ar); err != nil {
		return store.Archon{}, fmt.Errorf("creating archon %s: %w", name, err)
	}
	return ar, nil
}

// Archon returns the Archon with id.
func (a *Authority) Archon(ctx context.Context, id string) (store.Archon, error) {
	ar, err := a.st.GetArchon(ctx, id)
	if err != nil {
		return store.Archon{}, fmt.Errorf("archon %s: %w", id, err)
	}
	return ar, nil
}

// Archons lists every Archon.
func (a *Authority) Archons(ctx context.Context) ([]store.Archon, error) {
	as, err := a.st.ListArchons(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing archons: %w", err)
	}
	return as, nil
}

// DisableArchon disables Archon id and revokes every one of its tokens
// (SPEC §10.2): they are refused from their next request on, for good. The
// last enabled admin cannot be disabled (CodeConflict). It returns the
// Archon as stored.
func (a *Authority) DisableArchon(ctx context.Context, id string) (store.Archon, error) {
	if err := a.st.DisableArchon(ctx, id, a.now().UTC()); err != nil {
		return store.Archon{}, err // the store names the operation
	}
	return a.Archon(ctx, id)
}

// EnableArchon enables a disabled Archon again. Its tokens stay revoked:
// an admin issues it a new one (POST /v1/tokens with its archon_id). It
// returns the Archon as stored.
func (a *Authority) EnableArchon(ctx context.Context, id string) (store.Archon, error) {
	if err := a.st.EnableArchon(ctx, id); err != nil {
		return store.Archon{}, err // the store names the operation
	}
	return a.Archon(ctx, id)
}

// Bootstrap creates the first Archon (an admin named name) and issues its
// token. It is what `keeper init` prints; it refuses when any Archon exists.
func (a *Authority) Bootstrap(ctx context.Context, name string, ttl time.Duration) (store.Archon, Issued, error) {
	n, err := a.st.CountArchons(ctx)
	if err != nil {
		return store.Archon{}, Issued{}, fmt.Errorf("counting archons: %w", err)
	}
	if n > 0 {
		return store.Archon{}, Issued{}, domain.Errorf(domain.CodeConflict, "archons already exist: the first archon is created once")
	}
	ar, err := a.CreateArchon(ctx, name, RoleAdmin)
	if err != nil {
		return store.Archon{}, Issued{}, err
	}
	tok, err := a.IssueToken(ctx, ar, ttl, "first archon (keeper init)")
	if err != nil {
		return store.Archon{}, Issued{}, err
	}
	return ar, tok, nil
}
