package keeper

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/postgres"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// DefaultFirstTokenTTL is the lifetime of the first Archon's token.
const DefaultFirstTokenTTL = 365 * 24 * time.Hour

// InitOptions configures Init.
type InitOptions struct {
	config.Keeper
	ArchonName string        // the first Archon's name; "" means "admin"
	TokenTTL   time.Duration // its token's lifetime; 0 means DefaultFirstTokenTTL
}

// Initialized is what Init created.
type Initialized struct {
	Archon      store.Archon
	Token       auth.Issued
	Fingerprint string // the keeper CA's fingerprint, for souls to pin
	KeeperID    string
}

// Init prepares a data directory and database for a new keeper: it applies
// the migrations, creates the TLS material (self-signed CA and server
// certificate, or a copy of the given certificate and key), the keeper id,
// the token signing key (a key file, auth.signing_key_file) and the first Archon, an admin, and returns its
// token. It refuses with CodeConflict when the database already has
// Archons. A partial earlier attempt (no Archon yet) is completed.
func Init(ctx context.Context, opts InitOptions) (Initialized, error) {
	cfg := opts.Keeper
	if cfg.DataDir == "" {
		return Initialized{}, domain.Errorf(domain.CodeInvalid, "--data-dir is required")
	}
	if cfg.DatabaseURL != "" && !cfg.Postgres() {
		return Initialized{}, domain.Errorf(domain.CodeInvalid, "--database-url must be a postgres:// URL")
	}
	if (cfg.TLS.Cert == "") != (cfg.TLS.Key == "") {
		return Initialized{}, domain.Errorf(domain.CodeInvalid, "--tls-cert and --tls-key are given together")
	}
	name := opts.ArchonName
	if name == "" {
		name = "admin"
	}
	ttl := opts.TokenTTL
	if ttl == 0 {
		ttl = DefaultFirstTokenTTL
	}
	// Given TLS files are checked (read, parsed, the key matching the
	// certificate) before anything is written: an init refused for them
	// leaves neither a data directory nor a schema behind.
	var given *tlsutil.Material
	if cfg.TLS.Cert != "" {
		m, err := materialFromFiles(cfg.TLS.Cert, cfg.TLS.Key)
		if err != nil {
			return Initialized{}, fmt.Errorf("preparing TLS material: %w", err)
		}
		given = m
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return Initialized{}, fmt.Errorf("creating data directory: %w", err)
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return Initialized{}, err
	}
	defer st.Close()
	switch n, err := st.CountArchons(ctx); {
	case err != nil:
		return Initialized{}, fmt.Errorf("reading archons: %w", err)
	case n > 0:
		where := cfg.SQLitePath()
		if cfg.Postgres() {
			where = "the PostgreSQL database"
		}
		// A database of an older version still holds its signing key:
		// move it into the key file now, as serve would.
		if _, err := auth.New(ctx, st, cfg.SigningKeyFile()); err != nil && domain.ErrorCode(err) != domain.CodeUnavailable {
			return Initialized{}, err
		}
		return Initialized{}, domain.Errorf(domain.CodeConflict,
			"the keeper is already initialized (%s already has archons): start it with %s", where, ServeHint(cfg))
	}

	fp, err := initTLS(cfg, given)
	if err != nil {
		return Initialized{}, err
	}
	id, err := keeperID(cfg)
	if err != nil {
		return Initialized{}, err
	}
	switch ok, err := auth.Initialized(ctx, st, cfg.SigningKeyFile()); {
	case err != nil:
		return Initialized{}, err
	case !ok:
		if err := auth.Init(ctx, st, cfg.SigningKeyFile()); err != nil {
			return Initialized{}, err
		}
	}
	a, err := auth.New(ctx, st, cfg.SigningKeyFile())
	if err != nil {
		return Initialized{}, err
	}
	if _, err := secrets.LoadOrCreateKey(secrets.KeyFile(cfg.SigningKeyFile())); err != nil {
		return Initialized{}, err
	}
	ar, tok, err := a.Bootstrap(ctx, name, ttl)
	if err != nil {
		return Initialized{}, err
	}
	if err := a.Record(ctx, auth.Principal{ArchonID: ar.ID, Role: auth.RoleAdmin}, "keeper.init", ar.ID,
		map[string]any{"archon": name, "keeper_id": id, "ca_fingerprint": fp}); err != nil {
		return Initialized{}, err
	}
	return Initialized{Archon: ar, Token: tok, Fingerprint: fp, KeeperID: id}, nil
}

// checkInitialized refuses to serve a database that holds no keeper:
// opening it would migrate it into a fresh, empty store and the keeper
// would report ready having lost every Archon, soul, service and
// incarnation (issue 36). Nothing is written before the refusal.
//
// On SQLite a missing file (the keeper was most likely initialized on
// PostgreSQL and started without its URL), an empty one, one without the
// schema or without a single Archon is refused; on PostgreSQL a database
// without the Soul Stack schema (a wrong URL, or keeper init not run) or
// without an Archon. reinitialize (serve --reinitialize) lets the keeper
// start on an empty database on purpose.
func checkInitialized(ctx context.Context, cfg config.Keeper, reinitialize bool) error {
	if reinitialize {
		return nil
	}
	hint := ""
	if initializedDataDir(cfg) {
		hint = fmt.Sprintf(" The data directory %s was initialized, so its database was lost or emptied: restore it from a backup (docs/operations.md, \"Backup and restore\"), or start with --reinitialize to begin again with an empty store.", cfg.DataDir)
	}
	if cfg.Postgres() {
		switch ok, err := postgres.Initialized(ctx, cfg.DatabaseURL); {
		case err != nil:
			return fmt.Errorf("opening PostgreSQL store: %w", err)
		case !ok:
			return fmt.Errorf("the PostgreSQL database %s is not initialized (it has no Soul Stack schema; nothing was written to it): check --database-url (or SOULSTACK_DATABASE_URL), or run `keeper init --data-dir %s --database-url …` first.%s", redactURL(cfg.DatabaseURL), cfg.DataDir, hint)
		}
		switch n, err := postgres.CountArchons(ctx, cfg.DatabaseURL); {
		case err != nil:
			return fmt.Errorf("opening PostgreSQL store: %w", err)
		case n == 0:
			return fmt.Errorf("the PostgreSQL database %s holds no Archon (it is empty; nothing was written to it): run `keeper init --data-dir %s --database-url …` to finish initializing it.%s", redactURL(cfg.DatabaseURL), cfg.DataDir, hint)
		}
		return nil
	}
	path := cfg.SQLitePath()
	c, err := sqlite.Inspect(ctx, path)
	switch {
	case err != nil:
		return fmt.Errorf("opening SQLite store: %w", err)
	case !c.Exists:
		return fmt.Errorf("no SQLite database at %s: if this keeper was initialized on PostgreSQL, give the same --database-url (or SOULSTACK_DATABASE_URL); otherwise run `keeper init --data-dir %s` first.%s", path, cfg.DataDir, hint)
	case c.Empty():
		what := "is empty"
		if c.Schema {
			what = "holds no Archon"
		}
		return fmt.Errorf("the SQLite database %s %s; it was left as it is. If this keeper was never initialized, run `keeper init --data-dir %s`.%s", path, what, cfg.DataDir, hint)
	}
	return nil
}

// initializedDataDir reports whether the data directory says `keeper
// init` ran in it: it holds the generated TLS material, the signing key
// or the generated keeper id.
func initializedDataDir(cfg config.Keeper) bool {
	for _, p := range []string{filepath.Join(cfg.TLSDir(), "ca.crt"), cfg.SigningKeyFile(), cfg.KeeperIDFile()} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// ServeHint says how to start the keeper Init prepared with cfg: on
// PostgreSQL, serve needs the database URL again.
func ServeHint(cfg config.Keeper) string {
	if cfg.Postgres() {
		return fmt.Sprintf("`keeper serve --data-dir %s`, giving it the same --database-url (or SOULSTACK_DATABASE_URL)", cfg.DataDir)
	}
	return fmt.Sprintf("`keeper serve --data-dir %s`", cfg.DataDir)
}

// openStore opens PostgreSQL when a database URL is set, else the SQLite
// file in the data directory.
func openStore(ctx context.Context, cfg config.Keeper) (store.Store, error) {
	if cfg.Postgres() {
		st, err := postgres.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("opening PostgreSQL store: %w", err)
		}
		return st, nil
	}
	st, err := sqlite.Open(ctx, cfg.SQLitePath())
	if err != nil {
		return nil, fmt.Errorf("opening SQLite store: %w", err)
	}
	return st, nil
}

// loadTLS returns the listener's TLS configuration and the fingerprint
// souls pin: from --tls-cert/--tls-key when given, else from the material
// Init put in the data directory.
func loadTLS(cfg config.Keeper) (*tls.Config, string, error) {
	var m *tlsutil.Material
	var err error
	if cfg.TLS.Cert != "" {
		m, err = materialFromFiles(cfg.TLS.Cert, cfg.TLS.Key)
	} else {
		m, err = tlsutil.Load(cfg.TLSDir())
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("no TLS material in %s: run `keeper init --data-dir %s` first, or give --tls-cert and --tls-key", cfg.TLSDir(), cfg.DataDir)
		}
	}
	if err != nil {
		return nil, "", err
	}
	tc, err := m.ServerTLSConfig()
	if err != nil {
		return nil, "", err
	}
	fp, err := m.Fingerprint()
	if err != nil {
		return nil, "", err
	}
	return tc, fp, nil
}

// initTLS creates the TLS material in the data directory (or copies
// given, the material read from --tls-cert/--tls-key, there) unless it
// already holds some, and returns the fingerprint souls pin.
func initTLS(cfg config.Keeper, given *tlsutil.Material) (string, error) {
	dir := cfg.TLSDir()
	m := given
	var err error
	switch {
	case given != nil:
		err = m.Save(dir)
	default:
		m, err = tlsutil.LoadOrGenerate(dir, cfg.TLS.Hosts)
	}
	if err != nil {
		return "", fmt.Errorf("preparing TLS material: %w", err)
	}
	return m.Fingerprint()
}

// materialFromFiles reads an externally issued certificate (chain) and key.
// The last certificate of the chain is the one souls pin: the issuing CA
// when the file holds the chain, else the certificate itself.
func materialFromFiles(certFile, keyFile string) (*tlsutil.Material, error) {
	chain, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading --tls-cert: %w", err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading --tls-key: %w", err)
	}
	var blocks [][]byte
	for rest := chain; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			blocks = append(blocks, pem.EncodeToMemory(b))
		}
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("--tls-cert %s holds no PEM certificate", certFile)
	}
	m := &tlsutil.Material{CACertPEM: blocks[len(blocks)-1], ServerKeyPEM: key}
	if len(blocks) > 1 {
		blocks = blocks[:len(blocks)-1]
	}
	for _, b := range blocks {
		m.ServerCertPEM = append(m.ServerCertPEM, b...)
	}
	if _, err := m.ServerTLSConfig(); err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	return m, nil
}

var keeperIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// keeperID returns the configured keeper id, or the one generated once
// into the data directory.
func keeperID(cfg config.Keeper) (string, error) {
	if cfg.KeeperID != "" {
		if !keeperIDRE.MatchString(cfg.KeeperID) {
			return "", domain.Errorf(domain.CodeInvalid, "keeper id %q: use letters, digits, '_', '.' or '-'", cfg.KeeperID)
		}
		return cfg.KeeperID, nil
	}
	path := cfg.KeeperIDFile()
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); keeperIDRE.MatchString(id) {
			return id, nil
		}
		return "", fmt.Errorf("%s does not hold a keeper id", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading keeper id: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, strings.SplitN(host, ".", 2)[0])
	if host == "" || !keeperIDRE.MatchString(host) {
		host = "keeper"
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := fmt.Sprintf("%.50s-%s", host, hex.EncodeToString(b[:]))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing keeper id: %w", err)
	}
	return id, nil
}

// redactURL is a database URL without its password, for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "at --database-url"
	}
	return u.Redacted()
}
