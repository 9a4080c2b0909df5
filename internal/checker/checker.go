package checker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// Task statuses (SPEC §13).
const (
	StatusPending   = "PENDING"
	StatusRunning   = "RUNNING"
	StatusSuccess   = "SUCCESS"
	StatusFailure   = "FAILURE"
	StatusCancelled = "CANCELLED"
	StatusTimeout   = "TIMEOUT"
)

// IsTerminal reports whether a task status is final.
func IsTerminal(status string) bool {
	switch status {
	case StatusSuccess, StatusFailure, StatusCancelled, StatusTimeout:
		return true
	}
	return false
}

// RestartRunError is the run_error of tasks a keeper restart left behind.
const RestartRunError = "the keeper stopped while this task was running; its outcome is unknown (marked FAILURE at keeper start)"

// Commander runs a soulctl command (argv without "soulctl", e.g.
// ["souls", "list"]) in-process with the procedure's authority and returns
// its JSON output decoded (map[string]any, []any, …).
type Commander interface {
	Run(ctx context.Context, argv []string) (any, error)
}

// CommanderFunc adapts a function to Commander.
type CommanderFunc func(ctx context.Context, argv []string) (any, error)

// Run calls f.
func (f CommanderFunc) Run(ctx context.Context, argv []string) (any, error) { return f(ctx, argv) }

// Binding binds an external command prefix (the seed's scheduler, cluster,
// commands) to an executable. "scheduler request show --name x" runs
// Executable with Args followed by ["request", "show", "--name", "x"]; its
// stdout must be JSON, its stderr goes to the step log, a non-zero exit
// fails the call.
type Binding struct {
	Prefix     string   `json:"prefix" yaml:"prefix"`
	Executable string   `json:"executable" yaml:"executable"`
	Args       []string `json:"args,omitempty" yaml:"args,omitempty"`
	Env        []string `json:"env,omitempty" yaml:"env,omitempty"` // extra KEY=VALUE entries
	// StatusCommand reads the status of a task id this platform returned
	// (pushed into @deps), e.g. "tasks show --uuid {id}". It is an apicall
	// like any other, resolved through the binding table by its own prefix
	// (here a tasks binding), not run with this binding's executable; its
	// JSON must carry task_status (and may carry task_name, run_error,
	// task_message). Empty: ids from this prefix cannot be waited for.
	StatusCommand string        `json:"status_command,omitempty" yaml:"status_command,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"` // per call; 0 = DefaultCallTimeout
}

// DefaultCallTimeout bounds an external call whose binding sets no timeout.
const DefaultCallTimeout = 60 * time.Second

// DepStatus is one entry of @deps_status.
type DepStatus struct {
	TaskID      string `json:"task_id"`
	TaskName    string `json:"task_name"`
	TaskStatus  string `json:"task_status"`
	RunError    string `json:"run_error"`
	TaskMessage string `json:"task_message"`
}

// RunStatusFunc reads the status of a Soul Stack run (apply_id) as a
// dependency; it returns an error wrapping domain.ErrNotFound when id is no
// run.
type RunStatusFunc func(ctx context.Context, id string) (DepStatus, error)

// Config is what a Checker needs from the keeper.
type Config struct {
	Store store.Store // required
	// Secrets gives the defaults of secret vars (default_secret:, the
	// Keeper's secret store); nil refuses launches that need one.
	Secrets SecretSource
	// Commander runs Soul Stack's own commands (souls list, incarnation run,
	// …). Nil: such apicalls fail.
	Commander Commander
	Bindings  []Binding
	Clock     Clock       // nil = SystemClock
	IsLeader  func() bool // nil = always the leader (single keeper)
	KeeperID  string      // recorded on tasks; scopes Recover
	Logger    *slog.Logger
	// RunStatus looks up Soul Stack runs in @deps; nil reads them from Store.
	RunStatus RunStatusFunc
	// PollInterval is how often @deps that are not local Checker tasks are
	// polled; 0 = 2 s.
	PollInterval time.Duration
	// Metrics receives the Checker's series; nil records nothing.
	Metrics *Metrics
	// Forward launches a run-on-vip procedure on the leader keeper when
	// this one does not lead (SPEC §10.4); nil: such launches are refused
	// (unavailable) on a non-leader.
	Forward func(ctx context.Context, procedure string, vars map[string]any) ([]store.CheckerTask, error)
	// IsCommand reports whether a prefix is a command of the Commander
	// (soulctl's tree); it lets New refuse a status_command whose prefix
	// nothing runs. Nil: any prefix is taken to be one when a Commander is
	// set.
	IsCommand func(prefix string) bool
	// InputGuard, when set, is asked before a Commander apicall whose
	// command line carries one of the task's secrets (argv rendered; the
	// secret values): it refuses a secret passed into a scenario input
	// that is not secret: true (audit L10). Nil: no such check.
	InputGuard func(ctx context.Context, argv []string, secrets []string) error
	// DefaultTimeout bounds a task whose procedure sets no config.timeout;
	// 0 = DefaultTaskTimeout (SPEC §10.2 "Abuse bounds").
	DefaultTimeout time.Duration
	// MaxTaskWork bounds the work of one task: every command an apicall
	// runs (a list of N counts N) and every const condition evaluated, over
	// all its steps and attempts; 0 = DefaultMaxTaskWork (audit N6).
	MaxTaskWork int
	// MaxTaskLogRows bounds one task's step-log rows; 0 =
	// DefaultMaxTaskLogRows (audit N6).
	MaxTaskLogRows int
}

// DefaultTaskTimeout is the timeout of a task whose procedure and
// Keeper config set none.
const DefaultTaskTimeout = time.Hour

// Defaults of the per-task work bounds (audit N6: attempts.max bounds one
// condition, not steps × attempts × fan-out).
const (
	// DefaultMaxTaskWork is the commands and const evaluations one task
	// may run in all.
	DefaultMaxTaskWork = 10000
	// DefaultMaxTaskLogRows is the step-log rows one task may write.
	DefaultMaxTaskLogRows = 20000
)

// Checker launches and runs procedure tasks. Tasks run in goroutines the
// Checker owns; Close cancels and waits for them.
type Checker struct {
	store     store.Store
	commander Commander
	bindings  map[string]Binding
	clock     Clock
	isLeader  func() bool
	keeperID  string
	log       *slog.Logger
	runStatus RunStatusFunc
	poll      time.Duration
	metrics   *Metrics
	// defaultTimeout bounds tasks whose procedure sets no timeout.
	defaultTimeout time.Duration
	// maxWork and maxLogRows bound one task's work and step log.
	maxWork, maxLogRows int
	forward             func(ctx context.Context, procedure string, vars map[string]any) ([]store.CheckerTask, error)
	secrets             SecretSource
	inputGuard          func(ctx context.Context, argv []string, secrets []string) error

	ctx    context.Context // parent of every task
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	running map[string]*handle
}

// handle is a task running in this process.
type handle struct {
	parentID string
	cancel   context.CancelCauseFunc
	done     chan struct{}
}

var (
	errShutdown  = errors.New("the keeper shut down while the task was running")
	errCancelled = errors.New("cancelled by request")
)

// New validates cfg and returns a Checker.
func New(cfg Config) (*Checker, error) {
	if cfg.Store == nil {
		return nil, errors.New("checker: Config.Store is required")
	}
	c := &Checker{
		store:     cfg.Store,
		commander: cfg.Commander,
		bindings:  map[string]Binding{},
		clock:     cfg.Clock,
		isLeader:  cfg.IsLeader,
		keeperID:  cfg.KeeperID,
		log:       cfg.Logger,
		runStatus: cfg.RunStatus,
		poll:      cfg.PollInterval,
		metrics:   cfg.Metrics,
		forward:   cfg.Forward,
		secrets:   cfg.Secrets,
		running:   map[string]*handle{},

		defaultTimeout: cfg.DefaultTimeout,
		maxWork:        cfg.MaxTaskWork,
		maxLogRows:     cfg.MaxTaskLogRows,
		inputGuard:     cfg.InputGuard,
	}
	if c.maxWork <= 0 {
		c.maxWork = DefaultMaxTaskWork
	}
	if c.maxLogRows <= 0 {
		c.maxLogRows = DefaultMaxTaskLogRows
	}
	if c.defaultTimeout <= 0 {
		c.defaultTimeout = DefaultTaskTimeout
	}
	for _, b := range cfg.Bindings {
		switch {
		case b.Prefix == "" || b.Executable == "":
			return nil, fmt.Errorf("checker: binding %q: prefix and executable are required", b.Prefix)
		case b.Prefix == "checker":
			return nil, errors.New("checker: the prefix checker is built in and cannot be bound")
		}
		if _, dup := c.bindings[b.Prefix]; dup {
			return nil, fmt.Errorf("checker: prefix %q bound twice", b.Prefix)
		}
		if b.StatusCommand != "" {
			if _, err := ParseCommand(b.StatusCommand); err != nil {
				return nil, fmt.Errorf("checker: binding %q: status command: %w", b.Prefix, err)
			}
		}
		c.bindings[b.Prefix] = b
	}
	for _, b := range cfg.Bindings {
		if err := c.checkStatusCommand(b, cfg.IsCommand); err != nil {
			return nil, err
		}
	}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.isLeader == nil {
		c.isLeader = func() bool { return true }
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.runStatus == nil {
		c.runStatus = c.storeRunStatus
	}
	if c.poll <= 0 {
		c.poll = 2 * time.Second
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	return c, nil
}

// checkStatusCommand refuses a status_command of b whose own prefix is
// neither bound nor a command of the Commander: it is resolved through the
// binding table like any apicall (SPEC §13), never run with b's executable.
func (c *Checker) checkStatusCommand(b Binding, isCommand func(string) bool) error {
	if b.StatusCommand == "" {
		return nil
	}
	cmd, err := ParseCommand(b.StatusCommand)
	if err != nil {
		return err
	}
	argv, err := cmd.Argv(nil)
	if err != nil || len(argv) == 0 {
		return fmt.Errorf("checker: binding %q: status command %q is empty or templated (only {id} is replaced)", b.Prefix, b.StatusCommand)
	}
	prefix := argv[0]
	if _, bound := c.bindings[prefix]; bound || prefix == "checker" {
		return nil
	}
	if c.commander != nil && (isCommand == nil || isCommand(prefix)) {
		return nil
	}
	return fmt.Errorf("checker: binding %q: status command %q: no binding has the prefix %q — a status command is resolved through the binding table by its own prefix, so bind %q too (e.g. to the same executable)",
		b.Prefix, b.StatusCommand, prefix, prefix)
}

// Close cancels every running task (they end FAILURE: the keeper shut down)
// and waits for them.
func (c *Checker) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel(errShutdown)
	c.wg.Wait()
	return nil
}

// Recover marks the tasks a previous run of this keeper left PENDING or
// RUNNING as FAILURE (RestartRunError). Call it once at keeper start,
// before launching anything.
func (c *Checker) Recover(ctx context.Context) (int, error) {
	n, err := c.store.FailRunningCheckerTasks(ctx, c.keeperID, RestartRunError, c.clock.Now())
	if err != nil {
		return 0, fmt.Errorf("failing leftover checker tasks: %w", err)
	}
	return n, nil
}

var procNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// PutProcedure validates source and stores it under name. A procedure that
// does not validate is refused with a CodeInvalid error whose Details are
// the []Issue.
func (c *Checker) PutProcedure(ctx context.Context, name, source string) (*Procedure, error) {
	if !procNameRE.MatchString(name) {
		return nil, domain.Errorf(domain.CodeInvalid, "invalid procedure name %q (letters, digits, _ . -)", name)
	}
	p, err := ParseProcedure(name, []byte(source))
	if err != nil {
		return nil, invalid(name, err)
	}
	now := c.clock.Now()
	if err := c.store.PutProcedure(ctx, store.Procedure{Name: name, Source: source, CreatedAt: now, UpdatedAt: now}); err != nil {
		return nil, fmt.Errorf("storing procedure %s: %w", name, err)
	}
	return p, nil
}

// invalid wraps a validation failure as a CodeInvalid domain error.
func invalid(name string, err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return &domain.Error{Code: domain.CodeInvalid, Message: "invalid procedure " + name, Details: ve.Issues, Err: err}
	}
	return &domain.Error{Code: domain.CodeInvalid, Message: "invalid procedure " + name, Err: err}
}

// LoadProcedure reads and parses a stored procedure.
func (c *Checker) LoadProcedure(ctx context.Context, name string) (*Procedure, error) {
	sp, err := c.store.GetProcedure(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("procedure %s: %w", name, err)
	}
	p, err := ParseProcedure(name, []byte(sp.Source))
	if err != nil {
		return nil, invalid(name, err)
	}
	return p, nil
}

// ExecRequest asks for a procedure to be executed.
type ExecRequest struct {
	Procedure string
	// Vars are launch values for public vars. A scalar var given an array
	// fans out: one task per element, run in parallel.
	Vars       map[string]any
	ScheduleID string // set by the Scheduler
	ParentID   string // set for sub-procedures launched by a task
	// OnBehalfOf is the Archon the tasks act for: the schedule's owner,
	// or who executed the procedure. Empty: the Archon the launching task
	// acts for, if Execute is called from one (a sub-procedure).
	OnBehalfOf string
}

// Execute validates the launch and starts one task per fan-out element. It
// returns the created tasks (PENDING) without waiting for them; Wait does.
func (c *Checker) Execute(ctx context.Context, req ExecRequest) ([]store.CheckerTask, error) {
	proc, err := c.LoadProcedure(ctx, req.Procedure)
	if err != nil {
		return nil, err
	}
	sets, err := launchVars(proc, req.Vars)
	if err != nil {
		return nil, err
	}
	if err := c.secretDefaults(ctx, proc, sets); err != nil {
		return nil, err
	}
	if err := c.checkSecretRefs(ctx, proc); err != nil {
		return nil, err
	}
	onBehalf := req.OnBehalfOf
	if onBehalf == "" {
		onBehalf = OnBehalfOf(ctx)
	}
	if proc.Config.RunOnVIP && !c.isLeader() {
		if c.forward != nil && req.ScheduleID == "" {
			return c.forward(withOnBehalfOf(ctx, onBehalf), proc.Name, req.Vars)
		}
		return nil, domain.Errorf(domain.CodeUnavailable,
			"procedure %s runs only on the leader keeper (config.run-on-vip) and this keeper is not the leader", proc.Name)
	}
	tasks := make([]store.CheckerTask, 0, len(sets))
	for _, vars := range sets {
		t := store.CheckerTask{
			ID:         uuid.NewString(),
			Procedure:  proc.Name,
			Vars:       vars,
			Status:     StatusPending,
			ParentID:   req.ParentID,
			ScheduleID: req.ScheduleID,
			KeeperID:   c.keeperID,
			CreatedAt:  c.clock.Now(),
		}
		// The store (and the caller) get the vars with secrets masked;
		// the task runs with the real ones.
		stored := t
		stored.Vars = maskVars(proc, vars, secretValues(proc, vars))
		if err := c.store.CreateCheckerTask(ctx, stored); err != nil {
			return tasks, fmt.Errorf("creating task of %s: %w", proc.Name, err)
		}
		if err := c.start(proc, t, onBehalf); err != nil {
			now := c.clock.Now()
			stored.Status, stored.RunError, stored.FinishedAt = StatusFailure, err.Error(), &now
			if uerr := c.store.UpdateCheckerTask(context.WithoutCancel(ctx), stored); uerr != nil {
				c.log.Error("checker: failing a task that could not start", "task", t.ID, "err", uerr)
			}
			return tasks, err
		}
		tasks = append(tasks, stored)
	}
	return tasks, nil
}

// start runs task t of proc in a goroutine the Checker owns, acting for
// the Archon onBehalf (see OnBehalfOf).
func (c *Checker) start(proc *Procedure, t store.CheckerTask, onBehalf string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return domain.Errorf(domain.CodeUnavailable, "the checker is shutting down")
	}
	ctx, cancel := context.WithCancelCause(withOnBehalfOf(c.ctx, onBehalf))
	h := &handle{parentID: t.ParentID, cancel: cancel, done: make(chan struct{})}
	c.running[t.ID] = h
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(h.done)
		defer func() {
			c.mu.Lock()
			delete(c.running, t.ID)
			c.mu.Unlock()
		}()
		defer cancel(nil)
		c.run(ctx, proc, t)
	}()
	return nil
}

// Cancel stops a task running in this keeper; it ends CANCELLED.
func (c *Checker) Cancel(ctx context.Context, id string) error {
	c.mu.Lock()
	h := c.running[id]
	c.mu.Unlock()
	if h != nil {
		h.cancel(errCancelled)
		return nil
	}
	t, err := c.store.GetCheckerTask(ctx, id)
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	if IsTerminal(t.Status) {
		return domain.Errorf(domain.CodeConflict, "task %s already ended %s", id, t.Status)
	}
	return domain.Errorf(domain.CodeConflict, "task %s runs on keeper %q, not this one", id, t.KeeperID)
}

// cancelChildren cancels the running sub-tasks of parentID.
func (c *Checker) cancelChildren(parentID string, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.running {
		if h.parentID == parentID {
			h.cancel(cause)
		}
	}
}

// Wait blocks until task id, if it runs in this keeper, has ended, then
// returns it as stored.
func (c *Checker) Wait(ctx context.Context, id string) (store.CheckerTask, error) {
	if done := c.doneChan(id); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return store.CheckerTask{}, ctx.Err()
		}
	}
	return c.store.GetCheckerTask(ctx, id)
}

// doneChan returns the done channel of a task running here, or nil.
func (c *Checker) doneChan(id string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.running[id]; h != nil {
		return h.done
	}
	return nil
}

// launchVars checks launch values against the declarations and returns
// the effective vars of each task to start (several on fan-out).
func launchVars(p *Procedure, given map[string]any) ([]map[string]any, error) {
	norm, err := normalize(given)
	if err != nil {
		return nil, domain.Errorf(domain.CodeInvalid, "vars: %v", err)
	}
	g, _ := norm.(map[string]any)
	base := map[string]any{}
	fanVar := ""
	var fanVals []any
	for name, val := range g {
		d := p.Var(name)
		switch {
		case d == nil:
			return nil, domain.Errorf(domain.CodeInvalid, "procedure %s has no var %q", p.Name, name)
		case !d.Public:
			return nil, domain.Errorf(domain.CodeInvalid, "var %q of procedure %s is private and cannot be set at launch", name, p.Name)
		}
		if arr, ok := val.([]any); ok && !d.Type.IsArray() {
			if fanVar != "" {
				return nil, domain.Errorf(domain.CodeInvalid, "vars %q and %q both fan out (scalar given an array); only one may", fanVar, name)
			}
			for _, e := range arr {
				if e == nil || !checkType(d.Type, e) {
					return nil, domain.Errorf(domain.CodeInvalid, "var %q is %s; element %s of the fan-out array is not", name, d.Type, shown(d, e))
				}
			}
			fanVar, fanVals = name, arr
			continue
		}
		if val == nil || !checkType(d.Type, val) {
			return nil, domain.Errorf(domain.CodeInvalid, "var %q is %s, got %s", name, d.Type, shown(d, val))
		}
		base[name] = val
	}
	for _, d := range p.Vars {
		if _, set := g[d.Name]; set {
			continue
		}
		if d.HasDefault {
			base[d.Name] = d.Default
		} else if d.Public && d.DefaultSecret == "" {
			return nil, domain.Errorf(domain.CodeInvalid, "var %q of procedure %s has no default and must be set at launch", d.Name, p.Name)
		}
	}
	if fanVar == "" {
		return []map[string]any{base}, nil
	}
	out := make([]map[string]any, 0, len(fanVals))
	for _, v := range fanVals {
		m := make(map[string]any, len(base)+1)
		for k, x := range base {
			m[k] = x
		}
		m[fanVar] = v
		out = append(out, m)
	}
	return out, nil
}
