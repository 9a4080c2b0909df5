// Package config is the Keeper's operator-facing configuration: defaults,
// an optional YAML file (strictly decoded), the SOULSTACK_DATABASE_URL
// environment variable, then command-line flags, each overriding the one
// before. The keeper package turns it into the small configs of each
// component.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/catalog"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/netguard"
)

// EnvDatabaseURL names the environment variable that may carry the
// database URL, which keeps a password out of the process list.
const EnvDatabaseURL = "SOULSTACK_DATABASE_URL"

// Keeper is the configuration of one Keeper process.
type Keeper struct {
	// DataDir holds the SQLite database, the TLS material, the keeper id
	// and the materialized services.
	DataDir string `yaml:"data_dir"`
	// Listen is the address of the one listener (API, UI, soul stream,
	// metrics).
	Listen string `yaml:"listen"`
	// DatabaseURL selects PostgreSQL (postgres://…); empty means SQLite in
	// DataDir.
	DatabaseURL string `yaml:"database_url"`
	// KeeperID names this keeper among several sharing a database; empty
	// means the id generated once into DataDir.
	KeeperID string `yaml:"keeper_id"`
	// AdvertiseAddress is the host:port other keepers on the database
	// reach this keeper's listener at (to forward run-on-vip launches to
	// the leader); empty: the listen address, with a wildcard host
	// replaced by this machine's first non-loopback address.
	AdvertiseAddress string `yaml:"advertise_address"`
	// LogFormat is text or json; LogLevel debug, info, warn or error.
	LogFormat string `yaml:"log_format"`
	LogLevel  string `yaml:"log_level"`
	// FanOut bounds the hosts one dispatch works on at once.
	FanOut int `yaml:"fan_out"`
	// MaxSouls is this keeper's soul budget (0: none): beyond it a soul's
	// hello is refused as busy with a retry-after, and a soul with other
	// keepers goes to one of them (SPEC §17, keeper fleet).
	MaxSouls int `yaml:"max_souls"`
	// Rebalance, on a fleet (PostgreSQL), lets a keeper that starts with
	// fewer souls than its share ask the busiest keepers to move souls to
	// it (default true).
	Rebalance bool `yaml:"rebalance"`
	// TaskTimeout applies to tasks without their own timeout.
	TaskTimeout Duration `yaml:"task_timeout"`
	// HeartbeatInterval is the souls' heartbeat period.
	HeartbeatInterval Duration `yaml:"heartbeat_interval"`
	// HealthStaleAfter is how long a host may go without reporting its
	// health checks before they show stale (0 = three default summaries
	// plus 30 s).
	HealthStaleAfter Duration `yaml:"health_stale_after"`
	// ShutdownTimeout bounds the graceful drain on SIGTERM.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// SoulMaxMessageSize bounds one message an accepted soul sends (a
	// task result, a soulprint, a log line).
	SoulMaxMessageSize Size `yaml:"soul_max_message_size"`
	// SoulLeanStream serves souls that offer it the lean soul stream
	// (ALPN soulstack/1: protobuf frames over TLS, one goroutine per soul)
	// next to the Connect route over HTTP/2 (default true). false leaves
	// every soul on the HTTP/2 route.
	SoulLeanStream bool     `yaml:"soul_lean_stream"`
	TLS            TLS      `yaml:"tls"`
	Git            Git      `yaml:"git"`
	Checker        Checker  `yaml:"checker"`
	HTTP           HTTP     `yaml:"http"`
	Services       Services `yaml:"services"`
	Auth           Auth     `yaml:"auth"`
	Runs           Runs     `yaml:"runs"`
	API            API      `yaml:"api"`
	// PlainHTTP serves the Operator API and UI over plain HTTP next to TLS
	// on the one listener (default true, as the seeds' curl examples use
	// it). false answers plain connections with a refusal naming https://:
	// Archon tokens then never cross the network in clear.
	PlainHTTP bool `yaml:"plain_http"`
	// SoulDir holds the soul binaries (soul-linux-amd64, soul-linux-arm64)
	// served at GET /v1/soul/binary and by install.sh; empty means next to
	// the keeper executable, then /usr/lib/soulstack (the keeper package).
	SoulDir string `yaml:"soul_dir"`
}

// Services bounds the service trees materialized in the data dir.
type Services struct {
	// MaxTreeSize bounds the files of one commit's tree; a bigger commit
	// is refused at register/update/upgrade.
	MaxTreeSize Size `yaml:"max_tree_size"`
}

// HTTP bounds the requests the Keeper itself sends for on: keeper
// core.http.request tasks.
type HTTP struct {
	// Allow lists the destinations: "public" (any address outside
	// loopback, link-local, private and reserved ranges), CIDRs,
	// addresses, host names and *.domain wildcards. Empty means
	// ["public"]. Refused ranges open only through an entry inside them
	// or a host name. See internal/netguard.
	Allow []string `yaml:"allow"`
}

// Checker configures the Checker: the external command prefixes its
// procedures may call (the seed's scheduler, cluster, commands …), each
// bound to an executable whose stdout is JSON.
type Checker struct {
	Bindings []checker.Binding `yaml:"bindings"`
	// DefaultTimeout bounds a procedure task whose config sets no
	// timeout.
	DefaultTimeout Duration `yaml:"default_timeout"`
	// MaxTaskWork bounds the commands and const evaluations of one task
	// over all its steps and attempts (audit N6).
	MaxTaskWork int `yaml:"max_task_work"`
	// MaxTaskLogRows bounds one task's step-log rows (audit N6).
	MaxTaskLogRows int `yaml:"max_task_log_rows"`
}

// TLS locates the Keeper's TLS material. Empty Cert and Key mean the
// material `keeper init` generated into <data-dir>/tls.
type TLS struct {
	Cert string `yaml:"cert"` // PEM certificate (chain) file
	Key  string `yaml:"key"`  // PEM private key file
	// Hosts are extra names and addresses of the generated server
	// certificate (localhost, loopback and the hostname are always in).
	Hosts []string `yaml:"hosts"`
}

// Git configures access to service repositories.
type Git struct {
	// SSHKeyFile is the private key for ssh:// sources; empty uses the SSH
	// agent.
	SSHKeyFile string `yaml:"ssh_key_file"`
}

// Default returns the configuration used when nothing is set.
func Default() Keeper {
	return Keeper{
		Listen:             ":8080",
		LogFormat:          "text",
		LogLevel:           "info",
		FanOut:             1000,
		Rebalance:          true,
		TaskTimeout:        Duration(10 * time.Minute),
		HeartbeatInterval:  Duration(15 * time.Second),
		ShutdownTimeout:    Duration(30 * time.Second),
		SoulMaxMessageSize: Size(16 << 20),
		SoulLeanStream:     true,
		Checker:            Checker{DefaultTimeout: Duration(checker.DefaultTaskTimeout), MaxTaskWork: checker.DefaultMaxTaskWork, MaxTaskLogRows: checker.DefaultMaxTaskLogRows},
		Services:           Services{MaxTreeSize: Size(catalog.DefaultMaxTreeBytes)},
		PlainHTTP:          true,
		Runs:               Runs{Keep: DefaultRunsKeep()},
		API:                DefaultAPI(),
	}
}

// Load returns Default overridden by the YAML file at path (unknown keys
// are errors) and then by the environment.
func Load(path string) (Keeper, error) {
	k := Default()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return Keeper{}, fmt.Errorf("reading config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&k); err != nil && !errors.Is(err, io.EOF) {
			return Keeper{}, fmt.Errorf("config %s: %w", path, nameKey(b, err))
		}
	}
	if v := os.Getenv(EnvDatabaseURL); v != "" {
		k.DatabaseURL = v
	}
	return k, nil
}

// Validate checks the configuration and says what to change.
func (k Keeper) Validate() error {
	var errs []error
	if k.DataDir == "" {
		errs = append(errs, errors.New("data_dir (--data-dir) is required"))
	}
	if _, _, err := net.SplitHostPort(k.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen %q: want host:port or :port", k.Listen))
	}
	if k.DatabaseURL != "" && !k.Postgres() {
		errs = append(errs, fmt.Errorf("database_url must be a postgres:// or postgresql:// URL (leave it empty for SQLite in the data dir)"))
	}
	switch k.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log_format %q: use text or json", k.LogFormat))
	}
	if _, err := parseLevel(k.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if k.MaxSouls < 0 {
		return fmt.Errorf("max_souls must be 0 (no budget) or more, not %d", k.MaxSouls)
	}
	if k.FanOut < 1 {
		errs = append(errs, fmt.Errorf("fan_out must be at least 1"))
	}
	for name, d := range map[string]Duration{"task_timeout": k.TaskTimeout, "heartbeat_interval": k.HeartbeatInterval, "shutdown_timeout": k.ShutdownTimeout, "checker.default_timeout": k.Checker.DefaultTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	if k.Checker.MaxTaskWork < 1 || k.Checker.MaxTaskLogRows < 1 {
		errs = append(errs, fmt.Errorf("checker.max_task_work and checker.max_task_log_rows must be at least 1"))
	}
	if _, err := netguard.New(k.HTTP.Allow); err != nil {
		errs = append(errs, err)
	}
	if k.Services.MaxTreeSize < 1<<20 {
		errs = append(errs, fmt.Errorf("services.max_tree_size must be at least 1MiB"))
	}
	if k.SoulMaxMessageSize < 64<<10 {
		errs = append(errs, fmt.Errorf("soul_max_message_size must be at least 64KiB"))
	}
	if err := k.API.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := k.Runs.Keep.validate(); err != nil {
		errs = append(errs, err)
	}
	if k.Runs.MaxLoopItems < 0 {
		errs = append(errs, errors.New("runs.max_loop_items must not be negative (0 is the default, 10000)"))
	}
	if (k.TLS.Cert == "") != (k.TLS.Key == "") {
		errs = append(errs, errors.New("tls cert and key are given together or not at all"))
	}
	return errors.Join(errs...)
}

// Postgres reports whether the database is PostgreSQL.
func (k Keeper) Postgres() bool {
	return strings.HasPrefix(k.DatabaseURL, "postgres://") || strings.HasPrefix(k.DatabaseURL, "postgresql://")
}

// SQLitePath is the embedded database file.
func (k Keeper) SQLitePath() string { return filepath.Join(k.DataDir, "keeper.db") }

// TLSDir holds the generated (or copied) TLS material.
func (k Keeper) TLSDir() string { return filepath.Join(k.DataDir, "tls") }

// ServicesDir holds the materialized service trees and git mirrors.
func (k Keeper) ServicesDir() string { return filepath.Join(k.DataDir, "services") }

// KeeperIDFile holds the generated keeper id.
func (k Keeper) KeeperIDFile() string { return filepath.Join(k.DataDir, "keeper-id") }

// Logger builds the slog logger the configuration asks for, writing to w.
func (k Keeper) Logger(w io.Writer) (*slog.Logger, error) {
	lvl, err := parseLevel(k.LogLevel)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch k.LogFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log_format %q: use text or json", k.LogFormat)
	}
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log_level %q: use debug, info, warn or error", s)
	}
	return l, nil
}

// Duration is a time.Duration written as "30s", "10m" in YAML and flags.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String renders d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// Set parses a flag value.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: use 30s, 10m, 1h", s)
	}
	*d = Duration(v)
	return nil
}

// Type names the flag type.
func (d *Duration) Type() string { return "duration" }

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := d.Set(n.Value); err != nil {
		return &valueError{line: n.Line, col: n.Column, err: err}
	}
	return nil
}

// valueError is an invalid value at line:col of a YAML document. The
// value's own UnmarshalYAML does not know the key it is under: nameKey
// puts it in.
type valueError struct {
	line, col int
	key       string
	err       error
}

func (e *valueError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("line %d: %v", e.line, e.err)
	}
	return fmt.Sprintf("line %d: %s: %v", e.line, e.key, e.err)
}

func (e *valueError) Unwrap() error { return e.err }

// nameKey fills in the key (dotted path) of a valueError from the
// document doc it was found in, so `heartbeat_interval: 5` is reported
// as "line 2: heartbeat_interval: invalid duration "5"…" rather than
// without the field.
func nameKey(doc []byte, err error) error {
	var ve *valueError
	if !errors.As(err, &ve) {
		return err
	}
	var root yaml.Node
	if yaml.Unmarshal(doc, &root) != nil {
		return err
	}
	var find func(n *yaml.Node, path string) string
	find = func(n *yaml.Node, path string) string {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				if k := find(c, path); k != "" {
					return k
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, v := n.Content[i].Value, n.Content[i+1]
				if path != "" {
					key = path + "." + key
				}
				if v.Line == ve.line && v.Column == ve.col {
					return key
				}
				if k := find(v, key); k != "" {
					return k
				}
			}
		}
		return ""
	}
	ve.key = find(&root, "")
	return err
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }
