package apitypes

import "time"

// The resources below are what the API shows of the Keeper's records. They
// mirror store records field by field today, but they are their own types:
// internal/api converts at the handler, so a store schema change is never
// silently an API change (and store-only fields — hashes, ciphertexts,
// relay payloads — have no place here to leak through).

// Archon roles.
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
	RoleViewer   = "viewer"
)

// Soul statuses.
const (
	SoulPending      = "pending"
	SoulConnected    = "connected"
	SoulDisconnected = "disconnected"
	SoulRejected     = "rejected"
)

// Incarnation statuses.
const (
	IncarnationApplying    = "applying"
	IncarnationReady       = "ready"
	IncarnationErrorLocked = "error_locked"
)

// Run statuses.
const (
	RunPending   = "pending"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunAborted   = "aborted"
	RunCancelled = "cancelled"
)

// Drift host statuses of a DriftReport.
const (
	DriftClean   = "clean"
	DriftDrifted = "drifted"
	DriftUnknown = "unknown" // the host did not answer: neither clean nor drifted
)

// Archon is an operator identity; DisabledAt is set while it is disabled.
type Archon struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	CreatedAt  time.Time  `json:"created_at"`
	DisabledAt *time.Time `json:"disabled_at,omitempty"`
}

// Token is an issued token's record (never the token itself). ParentID is
// the token that minted it ("" for tokens the Keeper issued itself).
type Token struct {
	ID          string     `json:"id"`
	ArchonID    string     `json:"archon_id"`
	Description string     `json:"description,omitempty"`
	ExpiresAt   time.Time  `json:"expires_at"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	ParentID    string     `json:"parent_id,omitempty"`
}

// AuditEntry is one audited call: who (ArchonID, "" for system events),
// what (Action, e.g. "POST /v1/incarnations"), on what (Target), and the
// request summary with secrets masked.
type AuditEntry struct {
	ID       int64          `json:"id"`
	Time     time.Time      `json:"time"`
	ArchonID string         `json:"archon_id"`
	Action   string         `json:"action"`
	Target   string         `json:"target"`
	Summary  map[string]any `json:"summary,omitempty"`
}

// Soul is a registered host agent.
type Soul struct {
	SID       string         `json:"sid"`
	PublicKey []byte         `json:"public_key"`
	Status    string         `json:"status"`
	Covens    []string       `json:"covens"`
	Soulprint map[string]any `json:"soulprint"`
	Version   string         `json:"version,omitempty"`
	KeeperID  string         `json:"keeper_id,omitempty"` // keeper holding its stream
	LastSeen  time.Time      `json:"last_seen"`
	CreatedAt time.Time      `json:"created_at"`
}

// JoinToken is a join token's record (never its secret): souls presenting
// it onboard with Covens until it expires, is revoked or is used MaxUses
// times (0: no limit).
type JoinToken struct {
	ID        string     `json:"id"`
	Covens    []string   `json:"covens"`
	ExpiresAt time.Time  `json:"expires_at"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	Uses      int        `json:"uses"`
	MaxUses   int        `json:"max_uses,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Service is a catalog entry: a git source at a ref, resolved to a commit.
type Service struct {
	Name        string    `json:"name"`
	Git         string    `json:"git"`
	Ref         string    `json:"ref"`
	Commit      string    `json:"commit"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Warnings is the advice validating the commit found that does not
	// refuse it (as `soulctl scenario validate` prints it: an unquoted
	// ${ input.x } in a shell command line, …). Sent by register, update
	// and the get of one service.
	Warnings []Problem `json:"warnings,omitempty"`
}

// Incarnation is a runtime instance of a service on a set of member hosts.
type Incarnation struct {
	Name       string         `json:"name"`
	Service    string         `json:"service"`
	Ref        string         `json:"ref"`
	Commit     string         `json:"commit"`
	Covens     []string       `json:"covens"`
	Input      map[string]any `json:"input,omitempty"`   // creation input, secrets masked
	Essence    map[string]any `json:"essence,omitempty"` // essence overrides given at creation
	Status     string         `json:"status"`
	State      map[string]any `json:"state"`
	ActiveRun  string         `json:"active_run,omitempty"`
	LockReason string         `json:"lock_reason,omitempty"`
	Members    []string       `json:"members"` // SIDs, sorted
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

// Run is one execution of a scenario over an incarnation.
type Run struct {
	ID          string         `json:"apply_id"`
	Incarnation string         `json:"incarnation"`
	Scenario    string         `json:"scenario"`
	Input       map[string]any `json:"input,omitempty"` // secrets masked
	Check       bool           `json:"check"`
	Status      string         `json:"status"`
	Error       string         `json:"error,omitempty"`
	ArchonID    string         `json:"archon_id,omitempty"`
	KeeperID    string         `json:"keeper_id,omitempty"`
	ResumedFrom string         `json:"resumed_from,omitempty"` // the run this one resumes
	Commit      string         `json:"commit,omitempty"`
	Members     []string       `json:"members,omitempty"`
	UpgradeRef  string         `json:"upgrade_ref,omitempty"` // set on an upgrade's migration run
	Drift       bool           `json:"drift,omitempty"`       // a drift check run
	// ResultsPrunedAt is set once the run's per-host results were pruned
	// (runs.keep): the run record stays, its detail is gone.
	ResultsPrunedAt *time.Time `json:"results_pruned_at,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
}

// HostResult is one task's outcome on one host within a run, as run events
// carry it.
type HostResult struct {
	Seq        int            `json:"seq"`
	Path       string         `json:"path"`
	TaskName   string         `json:"task"`
	SID        string         `json:"sid"`
	Wave       int            `json:"wave"`
	Status     string         `json:"status"`
	Changed    bool           `json:"changed"`
	RC         int            `json:"rc"`
	Stdout     string         `json:"stdout"`
	Stderr     string         `json:"stderr"`
	Msg        string         `json:"msg"`
	Diff       string         `json:"diff"`
	DurationMS int64          `json:"duration_ms"`
	Data       map[string]any `json:"data,omitempty"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
}

// Snapshot is one entry of an incarnation's history: the committed state
// and a per-host outcome summary (sid → {ok, changed, failed, skipped}).
type Snapshot struct {
	ID          int64          `json:"id"`
	Incarnation string         `json:"incarnation"`
	RunID       string         `json:"apply_id"`
	Scenario    string         `json:"scenario"`
	State       map[string]any `json:"state"`
	Summary     map[string]any `json:"summary"`
	ResumedFrom string         `json:"resumed_from,omitempty"`
	Results     string         `json:"results,omitempty"` // link to the run's per-host detail
	CreatedAt   time.Time      `json:"created_at"`
}

// DriftTask is one task that would change a host.
type DriftTask struct {
	Path string `json:"path"`
	Task string `json:"task"`
	Msg  string `json:"msg,omitempty"`
	Diff string `json:"diff,omitempty"`
}

// DriftHost is one host's part of a drift report.
type DriftHost struct {
	Status string      `json:"status"` // DriftClean, DriftDrifted, DriftUnknown
	Tasks  []DriftTask `json:"tasks,omitempty"`
	Msg    string      `json:"msg,omitempty"` // why unknown
}

// DriftReport is the outcome of a drift check: per host, the tasks that
// would change; Error says why the check itself did not complete.
type DriftReport struct {
	RunID     string               `json:"apply_id"`
	Scenario  string               `json:"scenario"`
	Drifted   bool                 `json:"drifted"`
	Tasks     int                  `json:"tasks"`
	Hosts     map[string]DriftHost `json:"hosts"`
	Error     string               `json:"error,omitempty"`
	CheckedAt time.Time            `json:"checked_at"`
}

// Trigger is one pending onchanges trigger (SPEC §8.3): the handler owed
// to a host since the run that left it.
type Trigger struct {
	Incarnation string    `json:"incarnation"`
	Scenario    string    `json:"scenario"`
	Task        string    `json:"task"` // the handler task's path or name
	SID         string    `json:"sid"`
	RunID       string    `json:"apply_id"`
	CreatedAt   time.Time `json:"created_at"`
}

// Procedure is a stored Checker procedure (its YAML source).
type Procedure struct {
	Name      string    `json:"name"`
	Source    string    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CheckerTask is one execution of a procedure. Status is PENDING, RUNNING,
// SUCCESS, FAILURE, CANCELLED or TIMEOUT.
type CheckerTask struct {
	ID         string           `json:"task_id"`
	Procedure  string           `json:"task_name"`
	Vars       map[string]any   `json:"vars,omitempty"`
	Status     string           `json:"task_status"`
	RunError   string           `json:"run_error,omitempty"`
	Message    string           `json:"task_message,omitempty"`
	ParentID   string           `json:"parent_id,omitempty"`
	ScheduleID string           `json:"schedule_id,omitempty"`
	KeeperID   string           `json:"keeper_id,omitempty"`
	Log        []CheckerLogLine `json:"log,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	StartedAt  *time.Time       `json:"started_at,omitempty"`
	FinishedAt *time.Time       `json:"finished_at,omitempty"`
}

// CheckerLogLine is one entry of a Checker task's step log.
type CheckerLogLine struct {
	Time    time.Time      `json:"time"`
	Step    string         `json:"step"`
	Kind    string         `json:"kind"` // condition, attempt, action, parse, log, error
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// Schedule runs a procedure on a cron expression on behalf of its owner;
// Paused and PauseReason say when the owner is disabled, deleted or
// unknown.
type Schedule struct {
	ID          string         `json:"id"`
	Procedure   string         `json:"procedure"`
	Vars        map[string]any `json:"vars,omitempty"`
	Cron        string         `json:"cron"`
	OwnerID     string         `json:"owner_id"`
	Owner       string         `json:"owner,omitempty"`
	Paused      bool           `json:"paused"`
	PauseReason string         `json:"pause_reason,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
}
