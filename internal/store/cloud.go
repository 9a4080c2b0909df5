package store

import (
	"context"
	"time"
)

// CloudProvider is a registered cloud provider (SPEC §10.6): a kind
// ("exec" or "local") and its kind-specific configuration.
type CloudProvider struct {
	Name      string         `json:"name"`
	Kind      string         `json:"kind"`
	Config    map[string]any `json:"config"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// CloudProfile is an instance profile of a provider: the provider-specific
// spec of the instances it makes and the covens their souls join with.
type CloudProfile struct {
	Name      string         `json:"name"`
	Provider  string         `json:"provider"`
	Spec      map[string]any `json:"spec"`
	Covens    []string       `json:"covens"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// CloudInstance is an instance a provider created for an incarnation. Its
// name is unique per provider; SID is the soul expected from it.
type CloudInstance struct {
	Provider    string    `json:"provider"`
	Name        string    `json:"name"`
	Incarnation string    `json:"incarnation"`
	Profile     string    `json:"profile"`
	ID          string    `json:"id"`
	Address     string    `json:"address"`
	SID         string    `json:"sid"`
	CreatedAt   time.Time `json:"created_at"`
}

// CloudStore persists cloud providers, profiles and the instances created
// per incarnation.
type CloudStore interface {
	// PutCloudProvider inserts or replaces a provider (CreatedAt kept on
	// replace; zero UpdatedAt is now).
	PutCloudProvider(ctx context.Context, p CloudProvider) error
	GetCloudProvider(ctx context.Context, name string) (CloudProvider, error)
	ListCloudProviders(ctx context.Context) ([]CloudProvider, error) // by name
	// DeleteCloudProvider: conflict while a profile names it or an
	// instance of it is recorded; ErrNotFound when missing.
	DeleteCloudProvider(ctx context.Context, name string) error
	// PutCloudProfile inserts or replaces a profile; CodeInvalid when its
	// provider is not registered.
	PutCloudProfile(ctx context.Context, p CloudProfile) error
	GetCloudProfile(ctx context.Context, name string) (CloudProfile, error)
	ListCloudProfiles(ctx context.Context) ([]CloudProfile, error) // by name
	DeleteCloudProfile(ctx context.Context, name string) error
	// PutCloudInstance records an instance or updates its id, address and
	// SID; conflict when the provider already has an instance of that
	// name recorded for another incarnation.
	PutCloudInstance(ctx context.Context, in CloudInstance) error
	// ListCloudInstances lists the instances of incarnation ("" = all),
	// by provider and name.
	ListCloudInstances(ctx context.Context, incarnation string) ([]CloudInstance, error)
	// DeleteCloudInstance forgets an instance; a missing one is no error.
	DeleteCloudInstance(ctx context.Context, provider, name string) error
}
