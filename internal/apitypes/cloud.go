package apitypes

import "time"

// CloudProviderRequest is the body of PUT /v1/cloud/providers/{name}.
type CloudProviderRequest struct {
	Kind   string         `json:"kind"`
	Config map[string]any `json:"config,omitempty"`
}

// CloudProfileRequest is the body of PUT /v1/cloud/profiles/{name}.
type CloudProfileRequest struct {
	Provider string         `json:"provider"`
	Spec     map[string]any `json:"spec,omitempty"`
	Covens   []string       `json:"covens,omitempty"`
}

// CloudProvider is a registered cloud provider; its secret config values
// are masked for non-admins.
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

// CloudInstance is an instance a provider created for an incarnation; SID
// is the soul expected from it.
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
