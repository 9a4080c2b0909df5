package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

type scanner = interface{ Scan(...any) error }

// PutCloudProvider inserts or replaces a provider, keeping its creation time.
func (s *Store) PutCloudProvider(ctx context.Context, p store.CloudProvider) error {
	if p.Name == "" || p.Kind == "" {
		return s.wrap("storing a cloud provider", invalid("a cloud provider needs a name and a kind"))
	}
	cfg, err := reqMap(p.Config)
	if err != nil {
		return s.wrap("storing cloud provider "+p.Name, err)
	}
	now := s.orNow(p.UpdatedAt)
	_, err = s.write(ctx, `INSERT INTO cloud_providers (name, kind, config, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, config = excluded.config, updated_at = excluded.updated_at`,
		p.Name, p.Kind, cfg, s.ts(now), s.ts(now))
	return s.wrap("storing cloud provider "+p.Name, err)
}

const providerCols = `name, kind, config, created_at, updated_at`

func scanProvider(sc scanner) (store.CloudProvider, error) {
	var p store.CloudProvider
	err := sc.Scan(&p.Name, &p.Kind, mapCol{&p.Config, true}, timeCol{&p.CreatedAt}, timeCol{&p.UpdatedAt})
	return p, err
}

// GetCloudProvider returns a provider.
func (s *Store) GetCloudProvider(ctx context.Context, name string) (store.CloudProvider, error) {
	p, err := scanProvider(s.reader().row(ctx, `SELECT `+providerCols+` FROM cloud_providers WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return p, notFound("cloud provider", name)
	}
	return p, s.wrap("reading cloud provider "+name, err)
}

// ListCloudProviders lists every provider by name.
func (s *Store) ListCloudProviders(ctx context.Context) ([]store.CloudProvider, error) {
	rows, err := s.reader().query(ctx, `SELECT `+providerCols+` FROM cloud_providers ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing cloud providers", err)
	}
	out, err := collect(rows, scanProvider)
	return out, s.wrap("listing cloud providers", err)
}

// DeleteCloudProvider removes a provider no profile and no recorded
// instance uses.
func (s *Store) DeleteCloudProvider(ctx context.Context, name string) error {
	return s.inTx(ctx, "deleting cloud provider "+name, func(tx q) error {
		if err := mustExist(ctx, tx, "cloud provider", "cloud_providers", "name", name); err != nil {
			return err
		}
		var profiles, instances int
		if err := tx.row(ctx, `SELECT COUNT(*) FROM cloud_profiles WHERE provider = ?`, name).Scan(&profiles); err != nil {
			return err
		}
		if err := tx.row(ctx, `SELECT COUNT(*) FROM cloud_instances WHERE provider = ?`, name).Scan(&instances); err != nil {
			return err
		}
		if profiles > 0 || instances > 0 {
			return conflict(nil, "cloud provider %s is in use by %d profile(s) and %d instance(s): delete those first", name, profiles, instances)
		}
		_, err := tx.exec(ctx, `DELETE FROM cloud_providers WHERE name = ?`, name)
		return err
	})
}

// PutCloudProfile inserts or replaces a profile of a registered provider.
func (s *Store) PutCloudProfile(ctx context.Context, p store.CloudProfile) error {
	if p.Name == "" || p.Provider == "" {
		return s.wrap("storing a cloud profile", invalid("a cloud profile needs a name and a provider"))
	}
	spec, err := reqMap(p.Spec)
	if err != nil {
		return s.wrap("storing cloud profile "+p.Name, err)
	}
	now := s.orNow(p.UpdatedAt)
	return s.inTx(ctx, "storing cloud profile "+p.Name, func(tx q) error {
		if err := mustExist(ctx, tx, "cloud provider", "cloud_providers", "name", p.Provider); errors.Is(err, domain.ErrNotFound) {
			return invalid("cloud profile %s names provider %q, which is not registered (soulctl cloud provider list)", p.Name, p.Provider)
		} else if err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO cloud_profiles (name, provider, spec, covens, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET provider = excluded.provider, spec = excluded.spec, covens = excluded.covens, updated_at = excluded.updated_at`,
			p.Name, p.Provider, spec, strList(sortedSet(p.Covens)), s.ts(now), s.ts(now))
		return err
	})
}

const profileCols = `name, provider, spec, covens, created_at, updated_at`

func scanProfile(sc scanner) (store.CloudProfile, error) {
	var p store.CloudProfile
	err := sc.Scan(&p.Name, &p.Provider, mapCol{&p.Spec, true}, listCol{&p.Covens}, timeCol{&p.CreatedAt}, timeCol{&p.UpdatedAt})
	return p, err
}

// GetCloudProfile returns a profile.
func (s *Store) GetCloudProfile(ctx context.Context, name string) (store.CloudProfile, error) {
	p, err := scanProfile(s.reader().row(ctx, `SELECT `+profileCols+` FROM cloud_profiles WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return p, notFound("cloud profile", name)
	}
	return p, s.wrap("reading cloud profile "+name, err)
}

// ListCloudProfiles lists every profile by name.
func (s *Store) ListCloudProfiles(ctx context.Context) ([]store.CloudProfile, error) {
	rows, err := s.reader().query(ctx, `SELECT `+profileCols+` FROM cloud_profiles ORDER BY name`)
	if err != nil {
		return nil, s.wrap("listing cloud profiles", err)
	}
	out, err := collect(rows, scanProfile)
	return out, s.wrap("listing cloud profiles", err)
}

// DeleteCloudProfile removes a profile.
func (s *Store) DeleteCloudProfile(ctx context.Context, name string) error {
	n, err := s.write(ctx, `DELETE FROM cloud_profiles WHERE name = ?`, name)
	if err != nil {
		return s.wrap("deleting cloud profile "+name, err)
	}
	if n == 0 {
		return notFound("cloud profile", name)
	}
	return nil
}

// PutCloudInstance records an instance of an incarnation or updates it.
func (s *Store) PutCloudInstance(ctx context.Context, in store.CloudInstance) error {
	if in.Provider == "" || in.Name == "" || in.Incarnation == "" {
		return s.wrap("recording a cloud instance", invalid("a cloud instance needs a provider, a name and an incarnation"))
	}
	now := s.orNow(in.CreatedAt)
	return s.inTx(ctx, "recording cloud instance "+in.Name, func(tx q) error {
		var owner string
		err := tx.row(ctx, `SELECT incarnation FROM cloud_instances WHERE provider = ? AND name = ?`, in.Provider, in.Name).Scan(&owner)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.exec(ctx, `INSERT INTO cloud_instances (provider, name, incarnation, profile, instance_id, address, sid, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				in.Provider, in.Name, in.Incarnation, in.Profile, in.ID, in.Address, in.SID, s.ts(now))
			return err
		case err != nil:
			return err
		case owner != in.Incarnation:
			return conflict(owner, "instance %s of provider %s belongs to incarnation %s", in.Name, in.Provider, owner)
		}
		_, err = tx.exec(ctx, `UPDATE cloud_instances SET profile = ?, instance_id = ?, address = ?, sid = ? WHERE provider = ? AND name = ?`,
			in.Profile, in.ID, in.Address, in.SID, in.Provider, in.Name)
		return err
	})
}

// ListCloudInstances lists the instances of an incarnation ("" = all).
func (s *Store) ListCloudInstances(ctx context.Context, incarnation string) ([]store.CloudInstance, error) {
	query := `SELECT provider, name, incarnation, profile, instance_id, address, sid, created_at FROM cloud_instances`
	var args []any
	if incarnation != "" {
		query += ` WHERE incarnation = ?`
		args = append(args, incarnation)
	}
	rows, err := s.reader().query(ctx, query+` ORDER BY provider, name`, args...)
	if err != nil {
		return nil, s.wrap("listing cloud instances", err)
	}
	out, err := collect(rows, func(sc scanner) (store.CloudInstance, error) {
		var in store.CloudInstance
		err := sc.Scan(&in.Provider, &in.Name, &in.Incarnation, &in.Profile, &in.ID, &in.Address, &in.SID, timeCol{&in.CreatedAt})
		return in, err
	})
	return out, s.wrap("listing cloud instances", err)
}

// DeleteCloudInstance forgets an instance.
func (s *Store) DeleteCloudInstance(ctx context.Context, provider, name string) error {
	_, err := s.write(ctx, `DELETE FROM cloud_instances WHERE provider = ? AND name = ?`, provider, name)
	return s.wrap("deleting cloud instance "+name, err)
}
