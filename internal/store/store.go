// Package store defines everything Soul Stack persists, behind one
// interface implemented by store/sqlite (embedded default) and
// store/postgres (production). storetest holds the conformance suite both
// must pass. Writes that belong together happen in one transaction inside a
// single method; callers never see half-written state.
//
// Errors: a missing record is domain.ErrNotFound (wrapped); a uniqueness or
// state conflict is a *domain.Error with CodeConflict; an unreachable
// database (or a closed store) is a *domain.Error with CodeUnavailable.
//
// Values round-trip with these normalizations, identical on both backends:
//   - times are stored in UTC with microsecond precision and read back in
//     UTC; a zero creation time (CreatedAt, AuditEntry.Time,
//     CheckerLogLine.Time, HostResult.StartedAt/FinishedAt) is set to the
//     current time by the store;
//   - JSON maps go through encoding/json, so numbers read back as float64;
//     optional maps (Input, Essence, Data, Vars, Summary of an audit entry)
//     read back nil when stored nil;
//   - Covens are stored sorted and de-duplicated; Covens, Members, State,
//     Soulprint and Snapshot.Summary are never nil on read;
//   - strings sort bytewise (Go order) on both backends;
//   - a list method's limit <= 0 means no limit (AuditFilter.Limit: 100).
package store

import (
	"context"
	"time"
)

// Archon roles.
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
	RoleViewer   = "viewer"
	// RoleNone is an Archon without a keeper-wide role: its powers come
	// only from grants (its own and its teams').
	RoleNone = "none"
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

// Archon is an operator identity. A disabled Archon (DisabledAt set) is
// refused with every one of its tokens until it is enabled again.
type Archon struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	CreatedAt  time.Time  `json:"created_at"`
	DisabledAt *time.Time `json:"disabled_at,omitempty"`
}

// Token is an issued JWT's record (the JWT itself is not stored); revoked
// tokens are refused even before they expire, and the record's ExpiresAt,
// not the JWT's claim, is the expiry that counts. ParentID is the token
// that minted it ("" for tokens the Keeper issued itself: keeper init, a
// new Archon's first token, the Checker's): revoking a token revokes every
// token minted from it.
type Token struct {
	ID          string     `json:"id"`
	ArchonID    string     `json:"archon_id"`
	Description string     `json:"description,omitempty"`
	ExpiresAt   time.Time  `json:"expires_at"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	ParentID    string     `json:"parent_id,omitempty"`
}

// UISession is a web UI session (SPEC §12, issue 31). The browser holds
// only a random id; the store holds its SHA-256 (IDHash), so a copy of the
// database does not sign anyone in. The session acts with the Archon's
// role through the token it was opened with (TokenID): that token's
// expiry and revocation end the session too.
type UISession struct {
	IDHash     []byte     `json:"-"`
	ArchonID   string     `json:"archon_id"`
	TokenID    string     `json:"token_id"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	LastSeenAt time.Time  `json:"last_seen_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// AuditEntry records one mutating call.
type AuditEntry struct {
	ID       int64          `json:"id"`
	Time     time.Time      `json:"time"`
	ArchonID string         `json:"archon_id"` // "" for system events (e.g. refused soul key)
	Action   string         `json:"action"`    // e.g. "POST /v1/incarnations", "soul.key_mismatch"
	Target   string         `json:"target"`
	Summary  map[string]any `json:"summary,omitempty"` // request summary with secrets masked
}

// AuditFilter narrows ListAudit.
type AuditFilter struct {
	ArchonID string
	Action   string
	Limit    int // 0 = 100
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

// Facts is the soulprint as expressions see it (soulprint.self): what the
// soul reported, with covens filled in by the Keeper (the soul itself
// reports covens: []).
func (s Soul) Facts() map[string]any {
	f := make(map[string]any, len(s.Soulprint)+1)
	for k, v := range s.Soulprint {
		f[k] = v
	}
	covens := make([]any, len(s.Covens))
	for i, c := range s.Covens {
		covens[i] = c
	}
	f["covens"] = covens
	return f
}

// SoulFilter narrows ListSouls; empty fields match everything. Covens
// matches souls carrying all of the given covens.
type SoulFilter struct {
	Status string
	Covens []string
	// Brief reads only SID, Status and Covens (as GetSoulsBrief): for
	// callers that do not need the souls' soulprints, which can be large.
	Brief bool
}

// JoinToken lets a soul onboard automatically with the given covens.
// Only the SHA-256 hash of the secret is stored. A token works until it
// expires, is revoked, or has been used MaxUses times (0: no limit).
type JoinToken struct {
	ID         string     `json:"id"`
	SecretHash []byte     `json:"-"`
	Covens     []string   `json:"covens"`
	ExpiresAt  time.Time  `json:"expires_at"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	Uses       int        `json:"uses"`
	MaxUses    int        `json:"max_uses,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
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
}

// Incarnation is a runtime instance of a service on a set of member hosts.
type Incarnation struct {
	Name       string         `json:"name"`
	Service    string         `json:"service"`
	Ref        string         `json:"ref"`
	Commit     string         `json:"commit"`
	Covens     []string       `json:"covens"`
	Input      map[string]any `json:"input,omitempty"`   // creation input (secrets masked before storing)
	Essence    map[string]any `json:"essence,omitempty"` // essence overrides given at creation
	Status     string         `json:"status"`
	State      map[string]any `json:"state"`
	ActiveRun  string         `json:"active_run,omitempty"`
	LockReason string         `json:"lock_reason,omitempty"`
	Members    []string       `json:"members"` // SIDs, sorted; the membership relation
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`

	// SealedState holds the values of the state keys state_schema declares
	// secret: true, each sealed by the Keeper (base64 of the ciphertext);
	// State shows **** for them. Never serialized.
	SealedState map[string]string `json:"-"`
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
	// ResumedFrom is the apply_id of the run this one resumes (SPEC §8.8).
	ResumedFrom string `json:"resumed_from,omitempty"`
	// Commit and Members are the service commit and the members the run
	// ran with ("" and nil for runs recorded before they were kept): a
	// resume is refused when they changed since.
	Commit  string   `json:"commit,omitempty"`
	Members []string `json:"members,omitempty"`
	// UpgradeRef is set on the migration run of an upgrade: the run runs
	// the service at Commit, and its commit moves the incarnation to
	// UpgradeRef/Commit; until then (and if it fails) the incarnation stays
	// on its old commit.
	UpgradeRef string `json:"upgrade_ref,omitempty"`
	// Drift marks a drift check run (SPEC §8.9; Check is set too).
	Drift bool `json:"drift,omitempty"`
	// ResultsPrunedAt is when retention (runs.keep) deleted the run's
	// per-host results; the run record and its history entry stay.
	ResultsPrunedAt *time.Time `json:"results_pruned_at,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
}

// HostResult is one task's outcome on one host within a run. Seq orders the
// tasks of a run (block children get their own Seq); Path is the task's
// position ("2", "2.1" for the first child of block 2).
type HostResult struct {
	RunID      string         `json:"-"`
	Seq        int            `json:"seq"`
	Path       string         `json:"path"`
	TaskName   string         `json:"task"`
	SID        string         `json:"sid"`
	Wave       int            `json:"wave"`
	Status     string         `json:"status"` // domain.HostStatus values
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
	// Final is false for the Keeper's verdict on work whose soul never
	// answered (unreachable, timed out, cancelled): only such a row may be
	// replaced by a late result, once (RecordLateResults).
	Final bool `json:"-"`
}

// RunNote is what the run record says about a task that has no per-host
// result because it targeted no host (SPEC §6): Note says why.
type RunNote struct {
	RunID    string `json:"-"`
	Seq      int    `json:"seq"`
	Path     string `json:"path"`
	TaskName string `json:"task"`
	Note     string `json:"note"`
}

// Snapshot is one entry of an incarnation's history: the committed state and
// a per-host outcome summary of the run that produced it.
type Snapshot struct {
	ID          int64          `json:"id"`
	Incarnation string         `json:"incarnation"`
	RunID       string         `json:"apply_id"`
	Scenario    string         `json:"scenario"`
	State       map[string]any `json:"state"`
	// Summary counts the run's outcome: hosts, hosts_changed,
	// hosts_failed, and task results ok, changed, failed, skipped (and any
	// other status seen). The per-host detail is the run's results.
	Summary map[string]any `json:"summary"`
	// ResumedFrom is the run the committing run resumed (read from the
	// run; "" when it was not a resume).
	ResumedFrom string `json:"resumed_from,omitempty"`
	// Results links the run's per-host detail (/v1/runs/{apply_id}); the
	// API sets it, the store does not keep it.
	Results   string    `json:"results,omitempty"`
	CreatedAt time.Time `json:"created_at"`

	// SealedState, given to CommitRun, replaces the incarnation's sealed
	// secret state keys (Incarnation.SealedState) in the same transaction;
	// it is never part of the history row. Never serialized.
	SealedState map[string]string `json:"-"`
}

// DriftSchedule is an incarnation's periodic drift check (SPEC §8.9).
type DriftSchedule struct {
	Scenario string        `json:"scenario"`
	Every    time.Duration `json:"every"`
}

// Drift host statuses of a DriftReport.
const (
	DriftClean   = "clean"
	DriftDrifted = "drifted"
	DriftUnknown = "unknown" // the host did not answer: neither clean nor drifted
)

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
// would change.
type DriftReport struct {
	RunID    string               `json:"apply_id"`
	Scenario string               `json:"scenario"`
	Drifted  bool                 `json:"drifted"`
	Tasks    int                  `json:"tasks"` // tasks that would change, summed over hosts
	Hosts    map[string]DriftHost `json:"hosts"`
	// Error says why the check itself did not complete (hosts may then be
	// unknown).
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
}

// Drift is an incarnation's drift schedule (nil: none) and last report
// (nil: never checked).
type Drift struct {
	Incarnation string         `json:"incarnation"`
	Schedule    *DriftSchedule `json:"schedule,omitempty"`
	Report      *DriftReport   `json:"report,omitempty"`
}

// PendingTrigger is an onchanges handler owed to a host by a failed run
// (SPEC §8.3).
type PendingTrigger struct {
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

// CheckerLogLine is one entry of a task's step log.
type CheckerLogLine struct {
	Time    time.Time      `json:"time"`
	Step    string         `json:"step"`
	Kind    string         `json:"kind"` // condition, attempt, action, parse, log, error
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// Schedule runs a procedure on a cron expression on behalf of its owner,
// the Archon who made it. A schedule whose owner is disabled, deleted or
// unknown (made before schedules had owners) is paused: ListSchedules
// reads the owner with it and sets Owner, Paused and PauseReason (they are
// not stored).
type Schedule struct {
	ID          string         `json:"id"`
	Procedure   string         `json:"procedure"`
	Vars        map[string]any `json:"vars,omitempty"`
	Cron        string         `json:"cron"`
	OwnerID     string         `json:"owner_id"`
	Owner       string         `json:"owner,omitempty"` // the owner's name
	Paused      bool           `json:"paused"`
	PauseReason string         `json:"pause_reason,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
}

// Relay statuses: a relay batch is pending until the keeper holding its
// souls' streams claims it, claimed while that keeper runs the work, and
// done once its last results are written.
const (
	RelayPending = "pending"
	RelayClaimed = "claimed"
	RelayDone    = "done"
)

// RelayBatch is work one keeper relays through the database to another
// keeper for all the souls of one dispatch whose streams that keeper holds
// (SPEC §10.4): one row per (dispatch, keeper), however many souls. Work,
// Results bodies and Fallback are opaque to the store (the relay encodes,
// compresses and seals them); they can be far larger than a notification
// payload, which is why they travel in rows.
type RelayBatch struct {
	ID         int64  `json:"id"`
	FromKeeper string `json:"from_keeper"` // the keeper waiting for the results
	ToKeeper   string `json:"to_keeper"`   // the keeper holding the souls' streams
	RunID      string `json:"run_id,omitempty"`
	Task       string `json:"task,omitempty"`
	Souls      int    `json:"souls"` // how many souls the work addresses
	Work       []byte `json:"-"`
	Status     string `json:"status"`
	// Fallback, set when the batch was finished for its keeper (which
	// restarted or died), is the result of every soul without its own.
	Fallback   []byte     `json:"-"`
	Deadline   time.Time  `json:"deadline"` // after it nobody waits for the results
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// RelayResults is one batch of results of a RelayBatch, written by the
// keeper serving it as its souls answer.
type RelayResults struct {
	ID        int64     `json:"id"`
	BatchID   int64     `json:"batch_id"`
	Souls     int       `json:"souls"` // how many souls' results Body holds
	Body      []byte    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
}

// RelayFilter narrows ListRelayBatches; empty fields match everything.
type RelayFilter struct {
	FromKeeper string
	ToKeeper   string
	Status     string
}

// KeeperRecord is one keeper's row among keepers sharing a database (SPEC
// §10.4): its identity, the address of its API, its own Checker token and
// its heartbeat.
type KeeperRecord struct {
	ID             string    `json:"keeper_id"`
	Address        string    `json:"address,omitempty"` // host:port of its listener, as other keepers reach it
	Version        string    `json:"version,omitempty"`
	CheckerTokenID string    `json:"-"`
	StartedAt      time.Time `json:"started_at"`
	HeartbeatAt    time.Time `json:"heartbeat_at"`
}

// KeeperMove asks a keeper of a fleet to move souls to other keepers: all
// of them, refusing new ones until it restarts (Drain: maintenance), or
// Souls of them (a rebalance).
type KeeperMove struct {
	KeeperID    string    `json:"keeper_id"`
	Drain       bool      `json:"drain"`
	Souls       int       `json:"souls,omitempty"`
	By          string    `json:"by"` // who asked: an Archon, `keeper drain`, a keeper rebalancing
	RequestedAt time.Time `json:"requested_at"`
}

// Secret is one entry of the Keeper's secret store (SPEC §10.5). The
// store holds only Ciphertext (sealed by internal/secrets); the clear value
// never reaches the database. Owner is the Archon that first set it.
type Secret struct {
	Name       string `json:"name"`
	Ciphertext []byte `json:"-"`
	Owner      string `json:"owner"`
	// ScopeKind and Scope say which scenarios may read the secret: every
	// one (ScopeKeeper, the default for ""), a service's or an
	// incarnation's.
	ScopeKind string    `json:"scope_kind"`
	Scope     string    `json:"scope,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Store is everything Soul Stack persists.
type Store interface {
	HealthStore
	RulesStore
	AccessStore

	// Ping checks the database is reachable (readyz).
	Ping(ctx context.Context) error
	Close() error

	// Archons and tokens.
	CreateArchon(ctx context.Context, a Archon) error
	GetArchon(ctx context.Context, id string) (Archon, error)
	ListArchons(ctx context.Context) ([]Archon, error)
	CountArchons(ctx context.Context) (int, error)
	// DisableArchon marks the Archon disabled at at (disabling twice keeps
	// the first time) and revokes every one of its tokens. Conflict, nothing written, when it is the last
	// enabled admin — also when admins disable each other concurrently.
	// ErrNotFound when it does not exist.
	DisableArchon(ctx context.Context, id string, at time.Time) error
	// EnableArchon clears the Archon's DisabledAt; ErrNotFound when it does
	// not exist.
	EnableArchon(ctx context.Context, id string) error
	CreateToken(ctx context.Context, t Token) error
	GetToken(ctx context.Context, id string) (Token, error)
	// GetTokenArchon returns token id's record and its Archon, read
	// together (one query per authenticated request).
	GetTokenArchon(ctx context.Context, id string) (Token, Archon, error)
	// ListTokens lists the token records of archonID ("" = every Archon),
	// oldest first.
	ListTokens(ctx context.Context, archonID string) ([]Token, error)
	// RevokeToken revokes token id and every token minted from it
	// (recursively, through ParentID); revoking twice keeps the first
	// time. ErrNotFound when it does not exist.
	RevokeToken(ctx context.Context, id string, at time.Time) error

	// Web UI sessions (issue 31), keyed by the SHA-256 of the cookie's
	// random id. CreateUISession also drops sessions that ended a day
	// before s.CreatedAt; ErrNotFound for an unknown Archon or token.
	CreateUISession(ctx context.Context, s UISession) error
	// GetUISession returns the session with idHash; ErrNotFound when
	// there is none.
	GetUISession(ctx context.Context, idHash []byte) (UISession, error)
	// TouchUISession records activity of the session at at.
	TouchUISession(ctx context.Context, idHash []byte, at time.Time) error
	// RevokeUISession ends the session at at (logout); ending an ended or
	// unknown session is a no-op.
	RevokeUISession(ctx context.Context, idHash []byte, at time.Time) error

	// Audit.
	AppendAudit(ctx context.Context, e AuditEntry) error
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) // newest first

	// Key-value settings (signing key, keeper TLS fingerprint, …).
	GetSetting(ctx context.Context, key string) ([]byte, error)
	PutSetting(ctx context.Context, key string, value []byte) error
	// DeleteSetting removes key; a missing key is no error.
	DeleteSetting(ctx context.Context, key string) error

	// Cloud providers, profiles and instances (SPEC §10.6).
	CloudStore

	// Secrets (ciphertext only). PutSecret inserts s or replaces the
	// ciphertext and UpdatedAt of an existing one, keeping its Owner and
	// CreatedAt (a zero UpdatedAt is now; a new secret's CreatedAt is its
	// UpdatedAt). GetSecret and DeleteSecret: ErrNotFound when missing.
	PutSecret(ctx context.Context, s Secret) error
	GetSecret(ctx context.Context, name string) (Secret, error)
	// ListSecrets lists every secret by name, without ciphertext.
	ListSecrets(ctx context.Context) ([]Secret, error)
	DeleteSecret(ctx context.Context, name string) error

	// Souls.
	UpsertSoul(ctx context.Context, s Soul) error // insert or replace all fields but CreatedAt
	// UpsertSouls upserts souls as UpsertSoul does, all in one
	// transaction (bulk imports, scale tests).
	UpsertSouls(ctx context.Context, souls []Soul) error
	// CreateSoul inserts a new soul; conflict when its SID exists. Unlike
	// UpsertSoul it never replaces a registered soul's key or status, so of
	// two keepers registering one SID at once exactly one wins.
	CreateSoul(ctx context.Context, s Soul) error
	// ReplacePendingSoul replaces every field but CreatedAt of soul s.SID
	// if it is still pending under pendingKey (a join token taking over a
	// SID only pending under another key). Conflict, nothing written, when
	// it is not (an Archon decided, or another keeper replaced it
	// meanwhile); ErrNotFound when it does not exist.
	ReplacePendingSoul(ctx context.Context, s Soul, pendingKey []byte) error
	GetSoul(ctx context.Context, sid string) (Soul, error)
	ListSouls(ctx context.Context, f SoulFilter) ([]Soul, error) // sorted by SID
	// PageSouls returns one page (at most MaxPageLimit) of the souls
	// matching q, sorted by SID, and the cursor of the next page. A bad
	// fact path is CodeInvalid.
	PageSouls(ctx context.Context, q SoulQuery) (SoulPage, error)
	// ListCovens lists the distinct covens souls carry, sorted (at most
	// MaxPageLimit).
	ListCovens(ctx context.Context) ([]string, error)
	// GetSouls returns the registered souls among sids (an incarnation's
	// members), sorted by SID, each once; unknown SIDs are left out, no
	// error. Any number of SIDs (large lists are read in chunks).
	GetSouls(ctx context.Context, sids []string) ([]Soul, error)
	// GetSoulsBrief is GetSouls reading only SID, Status and Covens (the
	// other fields are zero): for callers that need the members' covens
	// but not their soulprints, which can be large.
	GetSoulsBrief(ctx context.Context, sids []string) ([]Soul, error)
	// CountSouls counts the registered souls by status (statuses without
	// souls are absent), without reading them.
	CountSouls(ctx context.Context) (map[string]int, error)
	// CountSoulsByKeeper counts the connected souls by the keeper holding
	// their stream (SPEC §10.4: how balanced a fleet of keepers is).
	CountSoulsByKeeper(ctx context.Context) (map[string]int, error)
	// SoulHolders returns, in one query, the keeper holding the stream of
	// each connected soul among sids (souls not connected, unknown or held
	// by no keeper are absent).
	SoulHolders(ctx context.Context, sids []string) (map[string]string, error)
	// SetSoulStatus sets status and keeper and sets LastSeen to at.
	SetSoulStatus(ctx context.Context, sid, status, keeperID string, at time.Time) error
	// MarkSoulConnected records the soul connected to keeperID and seen at
	// at, only if it is accepted (connected or disconnected). Conflict,
	// nothing written, when it is pending or rejected (an Archon rejected
	// it after its hello was decided); ErrNotFound when it does not exist.
	MarkSoulConnected(ctx context.Context, sid, keeperID string, at time.Time) error
	// MarkSoulDisconnected records the soul disconnected and seen at at
	// only if it is connected to keeperID; otherwise (rejected meanwhile,
	// or held by another keeper now) it writes nothing and returns nil.
	MarkSoulDisconnected(ctx context.Context, sid, keeperID string, at time.Time) error
	// AcceptSoul sets the covens of soul sid, its status disconnected (it
	// connects on its next hello) and clears its keeper, only if it is
	// still pending or rejected under expectKey — the record the Archon
	// decided on. Conflict, nothing written, when it is not (accepted, or
	// taken over with a join token, meanwhile); ErrNotFound when it does
	// not exist.
	AcceptSoul(ctx context.Context, sid string, covens []string, expectKey []byte) error
	UpdateSoulprint(ctx context.Context, sid string, soulprint map[string]any, at time.Time) error
	SetSoulCovens(ctx context.Context, sid string, covens []string) error
	TouchSoul(ctx context.Context, sid string, at time.Time) error
	// TouchSouls marks many souls seen (SID → when) in one transaction;
	// SIDs not registered (deleted meanwhile) are skipped.
	TouchSouls(ctx context.Context, seen map[string]time.Time) error
	// MarkSoulsDisconnected is MarkSoulDisconnected for many souls (SID →
	// last seen) in one transaction (a keeper stopping).
	MarkSoulsDisconnected(ctx context.Context, keeperID string, seen map[string]time.Time) error
	// SetSoulVersion sets the soul's version and nothing else (a hello
	// must not rewrite what an Archon decided meanwhile).
	SetSoulVersion(ctx context.Context, sid, version string) error
	// DeleteSoul forgets soul sid: its record (key binding, covens) and its
	// incarnation memberships, in one transaction. It returns the
	// incarnations it was a member of, sorted. ErrNotFound when it does not
	// exist.
	DeleteSoul(ctx context.Context, sid string) ([]string, error)
	// RekeySoul binds soul sid to publicKey, keeping its covens and
	// memberships; a connected soul is marked disconnected (its stream,
	// under the old key, is to be closed). ErrNotFound when it does not
	// exist.
	RekeySoul(ctx context.Context, sid string, publicKey []byte, at time.Time) error
	// MarkKeeperSoulsDisconnected marks every connected soul held by
	// keeperID disconnected and clears its keeper (keeper restart).
	MarkKeeperSoulsDisconnected(ctx context.Context, keeperID string) error

	// Join tokens.
	//
	// CreateJoinToken stores t; conflict when its id or secret hash is
	// taken, CodeInvalid for a negative MaxUses.
	CreateJoinToken(ctx context.Context, t JoinToken) error
	// UseJoinToken finds an unexpired, unrevoked token by secret hash and
	// counts a use, atomically: of concurrent uses at most MaxUses succeed.
	// An unknown, expired, revoked or used-up token is ErrNotFound.
	UseJoinToken(ctx context.Context, secretHash []byte, now time.Time) (JoinToken, error)
	// PeekJoinToken is UseJoinToken without counting a use: the token a
	// use at now would get (install.sh checks its token before touching
	// the host). Same ErrNotFound.
	PeekJoinToken(ctx context.Context, secretHash []byte, now time.Time) (JoinToken, error)
	// ListJoinTokens lists every join token, oldest first, without its
	// SecretHash.
	ListJoinTokens(ctx context.Context) ([]JoinToken, error)
	// RevokeJoinToken marks the token revoked at at (revoking twice keeps
	// the first time); ErrNotFound when it does not exist.
	RevokeJoinToken(ctx context.Context, id string, at time.Time) error

	// Services.
	CreateService(ctx context.Context, s Service) error
	GetService(ctx context.Context, name string) (Service, error)
	ListServices(ctx context.Context) ([]Service, error)
	UpdateService(ctx context.Context, s Service) error   // git, ref, commit, description, UpdatedAt (zero = now)
	DeleteService(ctx context.Context, name string) error // conflict while incarnations use it

	// Incarnations and their membership relation.
	//
	// CreateIncarnation inserts the incarnation (status applying, empty
	// state), its members and its first run, and points ActiveRun at it —
	// one transaction. Conflict if the name exists; ErrNotFound if the
	// service does not. inc.Status/State/ActiveRun are ignored; run's
	// Incarnation is set to inc.Name.
	CreateIncarnation(ctx context.Context, inc Incarnation, run Run) error
	GetIncarnation(ctx context.Context, name string) (Incarnation, error)
	ListIncarnations(ctx context.Context) ([]Incarnation, error) // sorted by name
	// CountIncarnations counts the incarnations by status (statuses
	// without incarnations are absent), without reading them.
	CountIncarnations(ctx context.Context) (map[string]int, error)
	// IncarnationNames lists the names of at most limit (see PageLimit)
	// incarnations in status, sorted.
	IncarnationNames(ctx context.Context, status string, limit int) ([]string, error)
	// DeleteIncarnation deletes the incarnation with its members, runs,
	// results, history and triggers; conflict while a run is active.
	DeleteIncarnation(ctx context.Context, name string) error
	// AddMembers adds SIDs to the membership relation (already present ones
	// are ignored); RemoveMembers removes them (absent ones are ignored).
	// Neither requires the SIDs to be registered souls.
	AddMembers(ctx context.Context, name string, sids []string) error
	RemoveMembers(ctx context.Context, name string, sids []string) error
	// SetIncarnationCommit moves the incarnation to a new ref/commit
	// (upgrade); conflict while a run is active.
	SetIncarnationCommit(ctx context.Context, name, ref, commit string) error

	// Runs.
	//
	// StartRun inserts run and marks the incarnation applying with
	// ActiveRun = run.ID in one transaction. It fails with CodeConflict
	// (Details: the active apply_id) when a run is active, and with
	// CodeConflict when the incarnation is error_locked. A check run does not
	// change the incarnation's status but still takes the active-run slot.
	// ErrNotFound when the incarnation does not exist. run.Status "" means
	// pending. A resume (run.ResumedFrom set) is the opposite: it requires
	// the incarnation error_locked (conflict otherwise) and unlocks it as
	// it starts, in the same transaction (SPEC §8.8).
	StartRun(ctx context.Context, run Run) error
	GetRun(ctx context.Context, id string) (Run, error)
	ListRuns(ctx context.Context, incarnation string, limit int) ([]Run, error) // newest first; "" = all
	// PageRuns returns one page (at most MaxPageLimit) of the runs
	// matching q, newest first, and the cursor of the next page. A cursor
	// this store did not give out is CodeInvalid.
	PageRuns(ctx context.Context, q RunQuery) (RunPage, error)
	// CountRuns counts the runs by status (statuses without runs are
	// absent), without reading them.
	CountRuns(ctx context.Context) (map[string]int, error)
	// SetRunStatus moves an unfinished run to pending or running (running
	// sets StartedAt = at); conflict when the run has already finished (for
	// example aborted meanwhile). Terminal statuses go through CommitRun,
	// FinishRun or AbortRuns.
	SetRunStatus(ctx context.Context, id, status string, at time.Time) error
	// RecordResults upserts per-host results (keyed by run, seq, sid), also
	// for finished runs (late results are recorded but change nothing).
	RecordResults(ctx context.Context, rs []HostResult) error
	// RecordLateResults records late results (SPEC §10.3): a row is
	// written only where none is, or over a row that is not Final; rows
	// written are Final. It returns how many were written.
	RecordLateResults(ctx context.Context, rs []HostResult) (int, error)
	ListResults(ctx context.Context, runID string) ([]HostResult, error) // by seq, sid
	// PageResults is one page of a run's results by host: every result of
	// at most q.Limit hosts (PageLimit bounds it) whose SID sorts after
	// q.After, by seq and sid, with the run's per-task counts over all its
	// hosts.
	PageResults(ctx context.Context, runID string, q ResultQuery) (ResultPage, error)
	// RecordRunNote upserts the note of a task that targeted no host,
	// keyed by (run, seq); ErrNotFound when the run does not exist.
	RecordRunNote(ctx context.Context, n RunNote) error
	ListRunNotes(ctx context.Context, runID string) ([]RunNote, error) // by seq
	// CommitRun, in one transaction: sets incarnation.state, appends the
	// snapshot, marks the run succeeded, status ready, clears ActiveRun;
	// for an upgrade's migration run (UpgradeRef set) it also moves the
	// incarnation to the run's ref and commit.
	// snap.State is state; empty snap.Incarnation/RunID/Scenario are taken
	// from the run; zero snap.CreatedAt is at. Conflict (nothing written)
	// when the run is finished already, is not the incarnation's active run,
	// or is a check run.
	CommitRun(ctx context.Context, runID string, state map[string]any, snap Snapshot, at time.Time) error
	// FinishRun ends a run without commit. For a normal run the incarnation
	// becomes error_locked (reason = errMsg) unless status is succeeded
	// (only check runs succeed without commit); for a check run the
	// incarnation keeps its previous status. ActiveRun is cleared. status
	// must be terminal (succeeded, failed, aborted, cancelled); conflict
	// (nothing written) when the run has already finished.
	FinishRun(ctx context.Context, runID, status, errMsg string, at time.Time) error
	// AbortRuns marks every pending/running run (owned by keeperID, or all
	// when "") aborted and their incarnations error_locked (check runs leave
	// the status alone); returns them as updated, oldest first.
	AbortRuns(ctx context.Context, keeperID string, at time.Time) ([]Run, error)
	// Unlock moves an error_locked incarnation to ready and clears
	// LockReason; conflict when it is not error_locked.
	Unlock(ctx context.Context, name string) error
	ListHistory(ctx context.Context, incarnation string, limit int) ([]Snapshot, error) // newest first
	// ListHistoryPage is one page of ListHistory: at most limit snapshots
	// (> 0) with an ID below before (0 = from the newest).
	ListHistoryPage(ctx context.Context, incarnation string, before int64, limit int) ([]Snapshot, error)
	// PruneResults deletes the per-host results and notes of the finished
	// runs keep no longer keeps (see RunRetention), in batches of their
	// own transactions, marks those runs ResultsPrunedAt = now and says
	// how much it deleted. Nothing when keep is not Enabled.
	PruneResults(ctx context.Context, keep RunRetention, now time.Time) (PruneReport, error)

	// Pending onchanges triggers, unique per (incarnation, scenario, task,
	// sid); adding an existing one refreshes its RunID and CreatedAt.
	AddTriggers(ctx context.Context, ts []PendingTrigger) error
	// ListTriggers lists an incarnation's triggers of scenario ("" = every
	// scenario), by scenario, task, sid.
	ListTriggers(ctx context.Context, incarnation, scenario string) ([]PendingTrigger, error)
	ClearTrigger(ctx context.Context, incarnation, scenario, task, sid string) error

	// Drift (SPEC §8.9). SetDriftSchedule sets (nil: clears) the
	// incarnation's drift schedule; PutDriftReport replaces its last
	// report. Both: ErrNotFound when the incarnation does not exist.
	// GetDrift returns an incarnation's schedule and last report (both nil
	// when none); ListDrift every incarnation that has either, by name.
	SetDriftSchedule(ctx context.Context, incarnation string, sched *DriftSchedule) error
	PutDriftReport(ctx context.Context, incarnation string, rep DriftReport) error
	GetDrift(ctx context.Context, incarnation string) (Drift, error)
	ListDrift(ctx context.Context) ([]Drift, error)

	// Checker.
	PutProcedure(ctx context.Context, p Procedure) error // insert or replace the source
	GetProcedure(ctx context.Context, name string) (Procedure, error)
	ListProcedures(ctx context.Context) ([]Procedure, error)
	DeleteProcedure(ctx context.Context, name string) error             // conflict while schedules use it
	CreateCheckerTask(ctx context.Context, t CheckerTask) error         // with t.Log; Status "" is PENDING
	GetCheckerTask(ctx context.Context, id string) (CheckerTask, error) // with its Log
	// ListCheckerTasks lists tasks of procedure ("" = all), newest first,
	// without their Log.
	ListCheckerTasks(ctx context.Context, procedure string, limit int) ([]CheckerTask, error)
	// UpdateCheckerTask replaces status, errors, timestamps; AppendCheckerLog
	// adds step-log lines.
	UpdateCheckerTask(ctx context.Context, t CheckerTask) error
	AppendCheckerLog(ctx context.Context, taskID string, lines []CheckerLogLine) error
	// FailRunningCheckerTasks marks PENDING/RUNNING tasks (of keeperID, or
	// all when "") FAILURE with runError (keeper restart).
	FailRunningCheckerTasks(ctx context.Context, keeperID, runError string, at time.Time) (int, error)
	CreateSchedule(ctx context.Context, s Schedule) error // ErrNotFound for an unknown procedure
	// ListSchedules lists every schedule, oldest first, with its owner's
	// name and whether it is paused (owner disabled, deleted or unknown).
	ListSchedules(ctx context.Context) ([]Schedule, error)
	DeleteSchedule(ctx context.Context, id string) error
	// ClaimTick records that schedule id's tick at `tick` runs; false when it
	// was already claimed (by this or another keeper). ErrNotFound for an
	// unknown schedule. Claims more than a day older than tick are pruned.
	ClaimTick(ctx context.Context, scheduleID string, tick time.Time) (bool, error)

	// Relayed work between keepers sharing a database (SPEC §10.4).
	//
	// CreateRelayBatch inserts b as pending (b.ID, Status, Fallback and
	// FinishedAt are ignored; zero CreatedAt is now) and returns its id.
	CreateRelayBatch(ctx context.Context, b RelayBatch) (int64, error)
	// ClaimRelayBatch moves batch id from pending to claimed for keeperID,
	// its addressee, and returns it with its Work. ErrNotFound when there
	// is no such batch; conflict when it is addressed to another keeper or
	// not pending.
	ClaimRelayBatch(ctx context.Context, id int64, keeperID string) (RelayBatch, error)
	// AddRelayResults appends a results row (body, for souls souls) to
	// unfinished batch batchID and, with final, marks the batch done, in
	// one transaction; it returns the batch without its Work. An empty body
	// adds no row. ErrNotFound when there is no such batch (its sender gave
	// up and deleted it); conflict when it is done already.
	AddRelayResults(ctx context.Context, batchID int64, body []byte, souls int, final bool, at time.Time) (RelayBatch, error)
	// TakeRelayResults reads batch batchID (without its Work) and then
	// deletes and returns its results rows, oldest first: when the batch
	// it returns is done, the rows returned are all there were.
	// ErrNotFound when there is no such batch.
	TakeRelayResults(ctx context.Context, batchID int64) (RelayBatch, []RelayResults, error)
	// DeleteRelayBatch deletes batch id and its results rows and returns
	// the batch without its Work. ErrNotFound when missing.
	DeleteRelayBatch(ctx context.Context, id int64) (RelayBatch, error)
	// ListRelayBatches lists the batches matching f by id, without Work
	// and Fallback.
	ListRelayBatches(ctx context.Context, f RelayFilter) ([]RelayBatch, error)
	// ResetRelays, when keeperID starts (or the leader cleans up after it),
	// finishes every unfinished batch addressed to it with fallback as the
	// result of the souls that have none (whatever its previous process
	// was doing is lost) and deletes every batch it sent, with their
	// results (nobody waits for them any more), in one transaction. It
	// returns the batches it finished, without their Work, so their
	// senders can be told.
	ResetRelays(ctx context.Context, keeperID string, fallback []byte, at time.Time) ([]RelayBatch, error)
	// PruneRelays deletes the batches whose deadline is before `before`
	// (left behind by keepers that went away for good), with their
	// results, and returns how many batches.
	PruneRelays(ctx context.Context, before time.Time) (int, error)

	// Keepers sharing the database (SPEC §10.4).
	//
	// RegisterKeeper inserts or replaces k's row (zero StartedAt is now,
	// zero HeartbeatAt is StartedAt).
	RegisterKeeper(ctx context.Context, k KeeperRecord) error
	// GetKeeper returns keeper id's row; ErrNotFound when there is none.
	GetKeeper(ctx context.Context, id string) (KeeperRecord, error)
	// ListKeepers lists every keeper row, by id.
	ListKeepers(ctx context.Context) ([]KeeperRecord, error)
	// KeeperHeartbeat sets keeper id's HeartbeatAt; ErrNotFound when its
	// row is gone (declared dead by the leader).
	KeeperHeartbeat(ctx context.Context, id string, at time.Time) error
	// DeleteKeeper deletes keeper id's row when its heartbeat is before
	// staleBefore (zero: unconditionally) and reports whether it did.
	DeleteKeeper(ctx context.Context, id string, staleBefore time.Time) (bool, error)
	// RequestKeeperMove records that keeper m.KeeperID is to move souls
	// to other keepers (SPEC §17, keeper fleet), replacing a request of
	// that keeper not taken yet.
	RequestKeeperMove(ctx context.Context, m KeeperMove) error
	// TakeKeeperMove removes and returns keeper id's move request; ok is
	// false when there is none.
	TakeKeeperMove(ctx context.Context, id string) (m KeeperMove, ok bool, err error)

	// Leases for singleton duties (leader election on SQLite; PostgreSQL may
	// also use advisory locks). TryLease takes or renews the lease for
	// holder until now+ttl; false when another holder has it and it has not
	// expired at now. ReleaseLease gives it up if holder has it.
	TryLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}
