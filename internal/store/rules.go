package store

import (
	"context"
	"time"
)

// Firing decisions (SPEC §17: every decision is recorded).
const (
	FiringFired      = "fired"      // the action started
	FiringDryRun     = "dry_run"    // it would have fired; only recorded
	FiringSuppressed = "suppressed" // a guardrail held it back (Reason says which)
	FiringFailed     = "failed"     // it fired, and the action could not start
	FiringResolved   = "resolved"   // the incident it had opened closed
)

// Suppression reasons.
const (
	SuppressedDuplicate  = "duplicate"
	SuppressedCooldown   = "cooldown"
	SuppressedPerHour    = "max_per_hour"
	SuppressedConcurrent = "max_concurrent"
	SuppressedPaused     = "paused"
	SuppressedOwner      = "owner"
)

// Delivery statuses of a notification.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryDead      = "dead"
)

// KeeperRule is a Keeper-wide rule (SPEC §17) set through the API by an
// admin: its YAML source and the Archon it acts for.
type KeeperRule struct {
	Name      string    `json:"name"`
	Source    string    `json:"source"`
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RulePause is the kill switch of one rule (its id: "keeper/<name>" or
// "<incarnation>/<name>"), or of all with "*".
type RulePause struct {
	Rule   string    `json:"rule"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Firing is one decision of a rule on an event.
type Firing struct {
	ID          int64          `json:"id"`
	Rule        string         `json:"rule"`
	Incarnation string         `json:"incarnation,omitempty"`
	EventKind   string         `json:"event_kind"`
	Event       map[string]any `json:"event"`
	IncidentKey string         `json:"incident,omitempty"`
	Decision    string         `json:"decision"`
	Reason      string         `json:"reason,omitempty"`
	Action      string         `json:"action"`
	RunID       string         `json:"apply_id,omitempty"`
	TaskIDs     []string       `json:"task_ids,omitempty"`
	Error       string         `json:"error,omitempty"`
	Owner       string         `json:"owner,omitempty"`
	At          time.Time      `json:"at"`
}

// FiringFilter selects firings, newest first.
type FiringFilter struct {
	Rule        string // "" = all
	Incarnation string
	Decision    string
	Before      int64 // id; 0 = from the newest
	Limit       int   // 0 = 100
}

// NotifyEndpoint is where notifications go (SPEC §17), configured by an
// admin. Sealed holds its secret (the webhook's HMAC key, or the SMTP
// password), sealed by the Keeper; it never leaves the Keeper.
type NotifyEndpoint struct {
	Name string `json:"name"`
	// Kind is webhook (generic JSON), slack (Slack-compatible JSON) or
	// email (SMTP).
	Kind      string         `json:"kind"`
	URL       string         `json:"url,omitempty"`
	Config    map[string]any `json:"config,omitempty"`
	Sealed    []byte         `json:"-"`
	HasSecret bool           `json:"has_secret"`
	Owner     string         `json:"owner"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// Delivery is one notification to one endpoint, with its retries; a
// delivery that ran out of attempts is dead (the dead-letter list).
type Delivery struct {
	ID        int64     `json:"id"`
	Endpoint  string    `json:"endpoint"`
	FiringID  int64     `json:"firing_id,omitempty"`
	Payload   []byte    `json:"-"`
	Status    string    `json:"status"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	NextAt    time.Time `json:"next_at"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RulesStore persists rules, their decisions, notification endpoints and
// deliveries.
type RulesStore interface {
	PutKeeperRule(ctx context.Context, r KeeperRule) error // insert or replace source and owner
	GetKeeperRule(ctx context.Context, name string) (KeeperRule, error)
	ListKeeperRules(ctx context.Context) ([]KeeperRule, error) // by name
	DeleteKeeperRule(ctx context.Context, name string) error

	PutRulePause(ctx context.Context, p RulePause) error
	DeleteRulePause(ctx context.Context, rule string) error // no error when not paused
	ListRulePauses(ctx context.Context) ([]RulePause, error)

	// AddFirings records decisions in one transaction and returns their
	// ids in order.
	AddFirings(ctx context.Context, fs []Firing) ([]int64, error)
	// SetFiringOutcome records what a fired decision started (or its
	// error, which turns it into failed).
	SetFiringOutcome(ctx context.Context, id int64, runID string, taskIDs []string, errMsg string) error
	ListFirings(ctx context.Context, f FiringFilter) ([]Firing, error)
	// RunRule returns the rule that started run ("" when none).
	RunRule(ctx context.Context, runID string) (string, error)

	PutEndpoint(ctx context.Context, e NotifyEndpoint) error
	GetEndpoint(ctx context.Context, name string) (NotifyEndpoint, error)
	ListEndpoints(ctx context.Context) ([]NotifyEndpoint, error)
	DeleteEndpoint(ctx context.Context, name string) error

	AddDelivery(ctx context.Context, d Delivery) (int64, error)
	UpdateDelivery(ctx context.Context, d Delivery) error // status, attempts, last_error, next_at
	// DueDeliveries lists pending deliveries whose next_at is not after
	// now, oldest first.
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	GetDelivery(ctx context.Context, id int64) (Delivery, error)
	ListDeliveries(ctx context.Context, status string, limit int) ([]Delivery, error) // newest first
}
