// Package catalog is the Keeper's service catalog: a service is a git
// repository at a ref. Registering one resolves the ref to a commit with
// go-git (https, ssh, file:// and plain local paths; branches, tags, full
// and abbreviated commits), materializes the tree of that commit once under
// <dir>/<name>/<commit>/ and validates it with the DSL loader before the
// catalog entry is written. The run engine opens services by commit
// (Open), so an incarnation keeps running the commit it pinned whatever the
// service's ref points at later.
//
// Remote repositories are mirrored (bare) under <dir>/.mirrors/ and fetched
// on every register or update; local ones are read in place.
package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	_ "github.com/soulstack/soulstack/internal/stateschema/dslhook" // state_schema checking when loading services
	"github.com/soulstack/soulstack/internal/store"
)

// Loader loads and validates a materialized service tree. An invalid tree
// is an error with CodeInvalid; when that error wraps dsl.Problems the
// catalog turns them into the file:line details of the 400 response.
type Loader func(ctx context.Context, dir string) (*dsl.Service, error)

// Config configures a Catalog.
type Config struct {
	Dir   string      // <data-dir>/services
	Store store.Store // the catalog entries
	Load  Loader      // validation; nil means DSLLoader
	// SSHKeyFile is the private key for ssh:// sources; "" uses the SSH
	// agent, go-git's default.
	SSHKeyFile string
	Logger     *slog.Logger
	// MaxTreeBytes bounds the bytes of one materialized tree; 0 means
	// DefaultMaxTreeBytes.
	MaxTreeBytes int64
	// TreeGrace keeps an unused tree this long after it was materialized
	// before Collect removes it; 0 means DefaultTreeGrace.
	TreeGrace time.Duration
}

// Catalog registers, updates and opens services. It is safe for concurrent
// use.
type Catalog struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	locks map[string]*keyLock
	cache map[string]*dsl.Service // name@commit → validated service
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// New returns a Catalog rooted at cfg.Dir.
func New(cfg Config) (*Catalog, error) {
	if cfg.Dir == "" || cfg.Store == nil {
		return nil, fmt.Errorf("catalog.New: Dir and Store are required")
	}
	if cfg.Load == nil {
		cfg.Load = DSLLoader
	}
	if cfg.MaxTreeBytes <= 0 {
		cfg.MaxTreeBytes = DefaultMaxTreeBytes
	}
	if cfg.TreeGrace <= 0 {
		cfg.TreeGrace = DefaultTreeGrace
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating catalog directory: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{cfg: cfg, log: log, locks: map[string]*keyLock{}, cache: map[string]*dsl.Service{}}
	c.cleanTemp()
	return c, nil
}

var serviceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// ValidName checks a service name: it names a directory, so it is short,
// lower case and path-safe.
func ValidName(name string) error {
	if !serviceName.MatchString(name) || strings.Contains(name, "..") {
		return domain.Errorf(domain.CodeInvalid,
			"service name %q is invalid: use 1-63 lower-case letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Register resolves ref in the repository at gitURL, materializes and
// validates that commit, and records the service. A name already taken is
// CodeConflict, a ref that does not exist CodeUnprocessable, an invalid
// repository CodeInvalid with the problems as details.
func (c *Catalog) Register(ctx context.Context, name, gitURL, ref string) (store.Service, error) {
	if err := ValidName(name); err != nil {
		return store.Service{}, err
	}
	if strings.TrimSpace(ref) == "" {
		return store.Service{}, domain.Errorf(domain.CodeInvalid, "ref is required: a branch, tag or commit")
	}
	switch _, err := c.cfg.Store.GetService(ctx, name); {
	case err == nil:
		return store.Service{}, domain.Errorf(domain.CodeConflict, "service %q is already registered: PATCH it to move it to another ref", name)
	case domain.ErrorCode(err) != domain.CodeNotFound:
		return store.Service{}, fmt.Errorf("service %s: %w", name, err)
	}
	commit, svc, err := c.prepare(ctx, name, gitURL, ref)
	if err != nil {
		return store.Service{}, err
	}
	now := time.Now().UTC()
	rec := store.Service{
		Name: name, Git: gitURL, Ref: ref, Commit: commit,
		Description: svc.Manifest.Description, CreatedAt: now, UpdatedAt: now,
	}
	if err := c.cfg.Store.CreateService(ctx, rec); err != nil {
		return store.Service{}, fmt.Errorf("recording service %s: %w", name, err)
	}
	c.log.InfoContext(ctx, "service registered", "service", name, "ref", ref, "commit", commit)
	c.logWarnings(ctx, name, commit, svc)
	return rec, nil
}

// Update moves a registered service to a new ref (and optionally a new git
// URL), with the same checks as Register. Incarnations keep the commit
// they pinned.
func (c *Catalog) Update(ctx context.Context, name, ref, gitURL string) (store.Service, error) {
	rec, err := c.cfg.Store.GetService(ctx, name)
	if err != nil {
		return store.Service{}, fmt.Errorf("service %s: %w", name, err)
	}
	if strings.TrimSpace(ref) == "" {
		return store.Service{}, domain.Errorf(domain.CodeInvalid, "ref is required: a branch, tag or commit")
	}
	if gitURL != "" {
		rec.Git = gitURL
	}
	commit, svc, err := c.prepare(ctx, name, rec.Git, ref)
	if err != nil {
		return store.Service{}, err
	}
	rec.Ref, rec.Commit, rec.Description, rec.UpdatedAt = ref, commit, svc.Manifest.Description, time.Now().UTC()
	if err := c.cfg.Store.UpdateService(ctx, rec); err != nil {
		return store.Service{}, err // the store's message starts with "updating service <name>"
	}
	c.log.InfoContext(ctx, "service updated", "service", name, "ref", ref, "commit", commit)
	c.logWarnings(ctx, name, commit, svc)
	return rec, nil
}

// Delete removes a service no incarnation uses, and its trees.
func (c *Catalog) Delete(ctx context.Context, name string) error {
	if err := c.cfg.Store.DeleteService(ctx, name); err != nil {
		return err // the store's message starts with "deleting service <name>"
	}
	c.mu.Lock()
	for k := range c.cache {
		if strings.HasPrefix(k, name+"@") {
			delete(c.cache, k)
		}
	}
	c.mu.Unlock()
	return c.removeTrees(name)
}

// Get returns the catalog entry of a service.
func (c *Catalog) Get(ctx context.Context, name string) (store.Service, error) {
	s, err := c.cfg.Store.GetService(ctx, name)
	if err != nil {
		return store.Service{}, fmt.Errorf("service %s: %w", name, err)
	}
	return s, nil
}

// List returns every catalog entry.
func (c *Catalog) List(ctx context.Context) ([]store.Service, error) {
	ss, err := c.cfg.Store.ListServices(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing services: %w", err)
	}
	return ss, nil
}

// Resolve returns the commit ref points at in the repository at gitURL
// (fetching it when remote), without materializing anything (upgrade
// checks).
func (c *Catalog) Resolve(ctx context.Context, gitURL, ref string) (string, error) {
	src, err := parseSource(gitURL)
	if err != nil {
		return "", err
	}
	repo, err := c.open(ctx, src)
	if err != nil {
		return "", err
	}
	h, err := resolve(repo, src, ref)
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// Open returns the validated service name at commit, materializing it again
// from its repository if the tree is gone (a fresh data directory of
// another keeper). Loaded services are cached per commit; the returned
// value is shared and must not be modified.
func (c *Catalog) Open(ctx context.Context, name, commit string) (*dsl.Service, error) {
	key := name + "@" + commit
	c.mu.Lock()
	svc := c.cache[key]
	c.mu.Unlock()
	if svc != nil {
		return svc, nil
	}
	unlock := c.lock("open:" + key)
	defer unlock()
	c.mu.Lock()
	svc = c.cache[key]
	c.mu.Unlock()
	if svc != nil {
		return svc, nil
	}
	dir, err := c.Path(ctx, name, commit)
	if err != nil {
		return nil, err
	}
	svc, err = c.load(ctx, name, commit, dir, true)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.cache[key] = svc
	c.mu.Unlock()
	return svc, nil
}

// Path returns the directory of the service's tree at commit (scenario
// templates and destiny bundles are read from it), materializing it when
// missing.
func (c *Catalog) Path(ctx context.Context, name, commit string) (string, error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	if !plumbing.IsHash(commit) {
		return "", domain.Errorf(domain.CodeInvalid, "commit %q is not a full commit hash", commit)
	}
	dir := c.treeDir(name, commit)
	if isDir(dir) {
		return dir, nil
	}
	rec, err := c.cfg.Store.GetService(ctx, name)
	if err != nil {
		return "", fmt.Errorf("service %s: %w", name, err)
	}
	src, err := parseSource(rec.Git)
	if err != nil {
		return "", err
	}
	repo, err := c.open(ctx, src)
	if err != nil {
		return "", err
	}
	return c.materialize(ctx, repo, name, plumbing.NewHash(commit))
}

// prepare resolves, materializes and validates; it returns the commit and
// the loaded service, which it caches.
func (c *Catalog) prepare(ctx context.Context, name, gitURL, ref string) (string, *dsl.Service, error) {
	src, err := parseSource(gitURL)
	if err != nil {
		return "", nil, err
	}
	repo, err := c.open(ctx, src)
	if err != nil {
		return "", nil, err
	}
	h, err := resolve(repo, src, ref)
	if err != nil {
		return "", nil, err
	}
	existed := isDir(c.treeDir(name, h.String()))
	dir, err := c.materialize(ctx, repo, name, h)
	if err != nil {
		return "", nil, err
	}
	commit := h.String()
	svc, err := c.load(ctx, name, commit, dir, false)
	if err != nil {
		if !existed {
			// A refused commit leaves nothing behind (a tree that was
			// there already belongs to an incarnation pinned to it).
			c.removeTree(name, commit)
		}
		return "", nil, err
	}
	c.mu.Lock()
	c.cache[name+"@"+commit] = svc
	c.mu.Unlock()
	return commit, svc, nil
}

// load runs the Loader and turns DSL problems into API details.
func (c *Catalog) load(ctx context.Context, name, commit, dir string, pinned bool) (*dsl.Service, error) {
	svc, err := c.cfg.Load(ctx, dir)
	if err != nil {
		return nil, invalidService(name, commit, err, pinned)
	}
	if svc == nil {
		return nil, fmt.Errorf("loading service %s at %s: the loader returned nothing", name, commit)
	}
	return svc, nil
}

// DSLLoader is the Loader of the DSL validator (dsl.Load).
func DSLLoader(_ context.Context, dir string) (*dsl.Service, error) {
	svc, ps := dsl.Load(dir)
	if len(ps) > 0 {
		return nil, ps
	}
	return svc, nil
}

// lock takes a named in-process lock and returns its release.
func (c *Catalog) lock(key string) func() {
	c.mu.Lock()
	l := c.locks[key]
	if l == nil {
		l = &keyLock{}
		c.locks[key] = l
	}
	l.refs++
	c.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		c.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(c.locks, key)
		}
		c.mu.Unlock()
	}
}

// logWarnings logs the advice validation found in a commit the catalog
// took in (it does not refuse the commit; the API answer carries it too).
func (c *Catalog) logWarnings(ctx context.Context, name, commit string, svc *dsl.Service) {
	for _, w := range svc.Warnings {
		c.log.WarnContext(ctx, "service warning", "service", name, "commit", commit, "warning", w.String())
	}
}
