package apitypes

import "time"

// Rule is one rule as GET /v1/rules lists it (SPEC §17): where it comes
// from, its event, action and guardrails, and whether it is paused.
type Rule struct {
	ID            string `json:"id"` // keeper/<name> or <incarnation>/<name>
	Name          string `json:"name"`
	Scope         string `json:"scope"` // keeper or the incarnation
	Service       string `json:"service,omitempty"`
	Description   string `json:"description,omitempty"`
	On            string `json:"on"`
	If            string `json:"if,omitempty"`
	Action        string `json:"action"`
	Target        string `json:"target"` // scenario, procedure or endpoints
	Cooldown      string `json:"cooldown"`
	MaxPerHour    int    `json:"max_per_hour"`
	MaxConcurrent int    `json:"max_concurrent"`
	Dedup         string `json:"dedup"`
	ResolveIf     string `json:"resolve_if,omitempty"`
	DryRun        bool   `json:"dry_run"`
	Paused        bool   `json:"paused"`
	Owner         string `json:"owner,omitempty"`
}

// PutRuleRequest sets a Keeper-wide rule: its YAML source.
type PutRuleRequest struct {
	Source string `json:"source"`
}

// PauseRuleRequest pauses a rule.
type PauseRuleRequest struct {
	Reason string `json:"reason,omitempty"`
}

// Firing is one recorded decision of a rule.
type Firing struct {
	ID          int64          `json:"id"`
	Rule        string         `json:"rule"`
	Incarnation string         `json:"incarnation,omitempty"`
	EventKind   string         `json:"event_kind"`
	Event       map[string]any `json:"event"`
	Incident    string         `json:"incident,omitempty"`
	Decision    string         `json:"decision"`
	Reason      string         `json:"reason,omitempty"`
	Action      string         `json:"action"`
	ApplyID     string         `json:"apply_id,omitempty"`
	TaskIDs     []string       `json:"task_ids,omitempty"`
	Error       string         `json:"error,omitempty"`
	Owner       string         `json:"owner,omitempty"`
	At          time.Time      `json:"at"`
}

// Endpoint is a notification endpoint; its secret is never shown.
type Endpoint struct {
	Name      string         `json:"name"`
	Kind      string         `json:"kind"`
	URL       string         `json:"url,omitempty"`
	Config    map[string]any `json:"config,omitempty"`
	HasSecret bool           `json:"has_secret"`
	Owner     string         `json:"owner"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// PutEndpointRequest sets an endpoint. Secret (the webhook's HMAC key or
// the SMTP password) is sealed; omitted, the stored one is kept.
type PutEndpointRequest struct {
	Kind   string         `json:"kind"`
	URL    string         `json:"url,omitempty"`
	Config map[string]any `json:"config,omitempty"`
	Secret *string        `json:"secret,omitempty"`
}

// Delivery is one notification to one endpoint and its attempts.
type Delivery struct {
	ID        int64     `json:"id"`
	Endpoint  string    `json:"endpoint"`
	FiringID  int64     `json:"firing_id,omitempty"`
	Status    string    `json:"status"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	NextAt    time.Time `json:"next_at"`
	CreatedAt time.Time `json:"created_at"`
}

// NotifyTestResult answers POST /v1/notify/endpoints/{name}/test.
type NotifyTestResult struct {
	Endpoint  string `json:"endpoint"`
	Delivered bool   `json:"delivered"`
}
