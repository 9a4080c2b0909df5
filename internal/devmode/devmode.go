// Package devmode is `keeper dev`: Soul Stack on one machine in one
// process — a Keeper on SQLite in a data directory (initialized the first
// time, with the first Archon's token printed and written to the soulctl
// config), N real soul processes each confined to its own root directory
// and carrying covens, and the bundled hello example registered from a
// local git repository. It prints the URLs, the token and the next commands,
// and stops everything cleanly when its context ends (Ctrl-C).
package devmode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/soulstack/soulstack/examples/hello"
	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/keeper"
)

// Defaults of Options.
const (
	DefaultDataDir = ".soulstack-dev"
	DefaultListen  = "127.0.0.1:8080"
	DefaultSouls   = 3
	ExampleService = "hello"
)

// Files dev mode keeps in its data directory.
const (
	TokenFile = "admin.token" // the first Archon's token, 0600
	StateFile = "dev.json"    // Info while dev mode is up, removed on exit
	KeeperLog = "keeper.log"
)

// Options configures Run.
type Options struct {
	DataDir string // default DefaultDataDir
	Listen  string // default DefaultListen; port 0 picks one
	Souls   int    // number of local souls; default DefaultSouls, 0 allowed with NoSouls
	NoSouls bool   // start no souls
	// SoulBin is the soul executable; "" looks next to this program, then
	// on PATH.
	SoulBin string
	// SoulctlConfig is where the soulctl config is written; "" means
	// soulctl's default path, "-" not at all.
	SoulctlConfig string
	NoExample     bool // do not register the hello example
	// Config is a keeper configuration file (keeper serve's --config) whose
	// settings apply — the Checker's bindings, say — except where dev mode
	// decides: data_dir, listen, database_url (SQLite in DataDir), log
	// level. "" means the defaults.
	Config   string
	LogLevel string // keeper log level (the log goes to DataDir/keeper.log)
	// Getenv reads the environment (soulctl's default config path); nil
	// means os.Getenv.
	Getenv func(string) string
	// Out receives the banner and notices; nil discards.
	Out io.Writer
	// Ready, when set, is called once everything is up.
	Ready func(Info)
}

// Info describes a running dev mode; it is also written to DataDir/dev.json.
type Info struct {
	PID         int    `json:"pid"`
	URL         string `json:"url"`     // plain HTTP: API, UI, curl
	TLSURL      string `json:"tls_url"` // the same port over TLS: souls
	UIURL       string `json:"ui_url"`
	Token       string `json:"-"`
	TokenFile   string `json:"token_file"`
	Fingerprint string `json:"fingerprint"`
	DataDir     string `json:"data_dir"`
	ConfigPath  string `json:"soulctl_config,omitempty"`
	Service     string `json:"service,omitempty"`
	Souls       []Soul `json:"souls"`
}

// Run starts dev mode and blocks until ctx ends or the Keeper fails, then
// stops the souls and the Keeper.
func Run(ctx context.Context, o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	out := o.Out
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", o.DataDir, err)
	}
	logf, err := os.OpenFile(filepath.Join(o.DataDir, KeeperLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the keeper log: %w", err)
	}
	defer logf.Close()
	cfg := config.Default()
	if o.Config != "" {
		if cfg, err = config.Load(o.Config); err != nil {
			return err
		}
	}
	cfg.DatabaseURL = ""
	cfg.DataDir = filepath.Join(o.DataDir, "keeper")
	cfg.Listen = o.Listen
	cfg.LogLevel = o.LogLevel
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	log, err := cfg.Logger(logf)
	if err != nil {
		return err
	}

	token, fresh, err := initialize(ctx, cfg, o.DataDir)
	if err != nil {
		return err
	}
	if fresh {
		fmt.Fprintf(out, "initialized a new keeper in %s\n", cfg.DataDir)
	}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: log})
	if err != nil {
		return fmt.Errorf("starting the keeper: %w", err)
	}
	defer k.Close()
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w (another keeper dev running? pass --listen 127.0.0.1:0 for any free port)", o.Listen, err)
	}
	host, port := dialAddr(ln.Addr())
	info := Info{
		PID:         os.Getpid(),
		URL:         "http://" + net.JoinHostPort(host, port),
		TLSURL:      "https://" + net.JoinHostPort(host, port),
		Fingerprint: k.Fingerprint(),
		DataDir:     o.DataDir,
		TokenFile:   filepath.Join(o.DataDir, TokenFile),
	}
	info.UIURL = info.URL + "/ui"

	serveCtx, stopKeeper := context.WithCancel(context.WithoutCancel(ctx))
	defer stopKeeper()
	served := make(chan error, 1)
	go func() { served <- k.Serve(serveCtx, ln) }()

	souls := &soulSupervisor{keeperURL: info.TLSURL, fingerprint: info.Fingerprint, log: log.With("component", "devmode"), out: out}
	soulCtx, stopSouls := context.WithCancel(context.WithoutCancel(ctx))
	// Shutdown order: souls first (by PID), then the keeper.
	defer func() {
		stopSouls()
		souls.wait()
		stopKeeper()
		if err := <-served; err != nil {
			fmt.Fprintf(out, "keeper: %v\n", err)
		}
		os.Remove(filepath.Join(o.DataDir, StateFile))
	}()

	err = setUp(ctx, o, k, &info, token, souls, soulCtx)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(out, "\nstopping: souls first, then the keeper …")
			return nil // Ctrl-C while starting
		}
		return err
	}
	if err := writeState(filepath.Join(o.DataDir, StateFile), info); err != nil {
		return err
	}
	printBanner(out, info)
	if o.Ready != nil {
		o.Ready(info)
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nstopping: souls first, then the keeper …")
		return nil
	case err := <-served:
		served <- err
		return fmt.Errorf("the keeper stopped: %w", err)
	}
}

// setUp runs everything between the keeper listening and dev mode being
// ready: token check, soulctl config, example service, souls.
func setUp(ctx context.Context, o Options, k *keeper.Keeper, info *Info, token string, souls *soulSupervisor, soulCtx context.Context) error {
	cl, err := apiclient.New(info.URL, token)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 15*time.Second, "the keeper to be ready", func() (bool, error) { return cl.Ready(ctx) == nil, nil }); err != nil {
		return err
	}
	if _, err := cl.Whoami(ctx); err != nil {
		// The saved token expired or was revoked: issue the first Archon
		// a new one.
		if token, err = reissue(ctx, k, o.DataDir); err != nil {
			return err
		}
		if cl, err = apiclient.New(info.URL, token); err != nil {
			return err
		}
	}
	info.Token = token
	if o.SoulctlConfig != "-" {
		path, err := writeSoulctlConfig(o, info.URL, token)
		if err != nil {
			return err
		}
		info.ConfigPath = path
	}
	if !o.NoExample {
		sub, err := fs.Sub(hello.Files, ".")
		if err != nil {
			return err
		}
		repo := filepath.Join(o.DataDir, "repos", ExampleService)
		if _, err := syncRepo(repo, sub); err != nil {
			return err
		}
		if _, err := registerService(ctx, cl, ExampleService, repo, exampleBranch); err != nil {
			return err
		}
		info.Service = ExampleService
	}
	if o.NoSouls || o.Souls == 0 {
		return nil
	}
	bin, err := findSoulBinary(o.SoulBin)
	if err != nil {
		return err
	}
	souls.bin = bin
	joins := map[string]string{} // covens → join token
	for i := 1; i <= o.Souls; i++ {
		dir := filepath.Join(o.DataDir, "souls", strconv.Itoa(i))
		s := Soul{SID: fmt.Sprintf("dev-soul-%d", i), Covens: soulCovens(i, o.Souls), DataDir: dir,
			Root: filepath.Join(dir, "root"), Log: filepath.Join(dir, "soul.log")}
		key := strings.Join(s.Covens, ",")
		if joins[key] == "" {
			jt, err := cl.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: s.Covens, TTL: apitypes.Duration(time.Hour)})
			if err != nil {
				return fmt.Errorf("creating a join token: %w", err)
			}
			joins[key] = jt.Token
		}
		if err := souls.start(soulCtx, s, joins[key]); err != nil {
			return err
		}
		info.Souls = append(info.Souls, s)
	}
	want := make(map[string]bool, len(info.Souls))
	for _, s := range info.Souls {
		want[s.SID] = true
	}
	return waitFor(ctx, 60*time.Second, fmt.Sprintf("%d souls to connect (logs in %s/souls/*/soul.log)", len(want), o.DataDir), func() (bool, error) {
		list, err := cl.ListSouls(ctx, apitypes.SoulQuery{Status: "connected"})
		if err != nil {
			return false, nil
		}
		n := 0
		for _, s := range list {
			if want[s.SID] {
				n++
			}
		}
		return n == len(want), nil
	})
}

func (o *Options) defaults() error {
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	o.DataDir = abs
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Souls < 0 || o.Souls > 100 {
		return fmt.Errorf("--souls must be between 0 and 100, not %d", o.Souls)
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	return nil
}

// initialize initializes the keeper the first time (fresh) and returns the
// first Archon's token: the new one, or the one saved by an earlier start
// ("" when that file is gone: setUp then issues one).
func initialize(ctx context.Context, cfg config.Keeper, dataDir string) (token string, fresh bool, err error) {
	path := filepath.Join(dataDir, TokenFile)
	ini, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg, ArchonName: "admin"})
	switch {
	case err == nil:
		if err := os.WriteFile(path, []byte(ini.Token.Token+"\n"), 0o600); err != nil {
			return "", false, fmt.Errorf("saving the token: %w", err)
		}
		return ini.Token.Token, true, nil
	case isConflict(err):
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("reading the token: %w", err)
		}
		return strings.TrimSpace(string(b)), false, nil
	default:
		return "", false, fmt.Errorf("initializing the keeper in %s: %w", cfg.DataDir, err)
	}
}

// reissue issues the first admin Archon a new token and saves it.
func reissue(ctx context.Context, k *keeper.Keeper, dataDir string) (string, error) {
	archons, err := k.Auth().Archons(ctx)
	if err != nil {
		return "", fmt.Errorf("reading archons: %w", err)
	}
	for _, a := range archons {
		if a.Role != "admin" {
			continue
		}
		tok, err := k.Auth().IssueToken(ctx, a, keeper.DefaultFirstTokenTTL, "keeper dev")
		if err != nil {
			return "", fmt.Errorf("issuing a token: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dataDir, TokenFile), []byte(tok.Token+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("saving the token: %w", err)
		}
		return tok.Token, nil
	}
	return "", errors.New("the keeper has no admin Archon to issue a token for")
}

// writeSoulctlConfig points soulctl at this keeper. A config that pointed
// at another keeper is kept as config.yaml.bak.
func writeSoulctlConfig(o Options, url, token string) (string, error) {
	path := o.SoulctlConfig
	if path == "" {
		if p := o.Getenv(cli.EnvConfig); p != "" {
			path = p
		} else {
			p, err := cli.DefaultConfigPath(o.Getenv)
			if err != nil {
				return "", err
			}
			path = p
		}
	}
	old, err := cli.LoadSettings(path)
	if err == nil && old.Keeper != "" && old.Keeper != url {
		if err := os.Rename(path, path+".bak"); err != nil {
			return "", fmt.Errorf("keeping the old soulctl config: %w", err)
		}
	}
	if err := cli.SaveSettings(path, cli.Settings{Keeper: url, Token: token}); err != nil {
		return "", err
	}
	return path, nil
}

// dialAddr is where local clients reach a listener: loopback for a
// wildcard address.
func dialAddr(a net.Addr) (host, port string) {
	host, port, _ = net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return host, port
}

// waitFor polls cond until it holds, ctx ends or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeState(path string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func isConflict(err error) bool { return domain.ErrorCode(err) == domain.CodeConflict }
