package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

// Settings are where soulctl finds its Keeper and who it is there: the
// content of the config file, and the result of merging flags, environment
// and that file.
type Settings struct {
	Keeper      string `yaml:"keeper"`
	Token       string `yaml:"token"`
	Fingerprint string `yaml:"fingerprint,omitempty"`
	CAFile      string `yaml:"ca_file,omitempty"`
}

// Environment variables soulctl reads.
const (
	EnvKeeper      = "SOULCTL_KEEPER"
	EnvToken       = "SOULCTL_TOKEN"
	EnvConfig      = "SOULCTL_CONFIG"
	EnvFingerprint = "SOULCTL_FINGERPRINT"
	EnvCAFile      = "SOULCTL_CA_FILE"
)

// DefaultConfigPath is the config file soulctl reads and `soulctl login`
// writes when neither --config nor $SOULCTL_CONFIG names one:
// $XDG_CONFIG_HOME/soulctl/config.yaml, else ~/.config/soulctl/config.yaml.
func DefaultConfigPath(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "soulctl", "config.yaml"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the config file: %w (set --config or $XDG_CONFIG_HOME)", err)
		}
		home = h
	}
	return filepath.Join(home, ".config", "soulctl", "config.yaml"), nil
}

// configPath is the config file of this invocation.
func (g *Globals) configPath() (string, error) {
	if g.Config != "" {
		return g.Config, nil
	}
	if p := g.getenv(EnvConfig); p != "" {
		return p, nil
	}
	return DefaultConfigPath(g.getenv)
}

// LoadSettings reads a config file; a missing file is empty settings.
func LoadSettings(path string) (Settings, error) {
	var s Settings
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading config %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return s, fmt.Errorf("config %s: %w", path, err)
	}
	return s, nil
}

// SaveSettings writes a config file readable by its owner only, creating
// its directory, atomically (temp file and rename).
func SaveSettings(path string, s Settings) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	b = append([]byte("# soulctl configuration (written by soulctl login / keeper dev)\n"), b...)
	f, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("writing config: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing config %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing config %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing config %s: %w", path, err)
	}
	return nil
}

// Settings merges, field by field, flags over environment over the config
// file.
func (g *Globals) Settings() (Settings, error) {
	path, err := g.configPath()
	if err != nil {
		return Settings{}, err
	}
	file, err := LoadSettings(path)
	if err != nil {
		return Settings{}, cmdutil.Usage(err)
	}
	pick := func(flag, env, fromFile string) string {
		if flag != "" {
			return flag
		}
		if v := g.getenv(env); v != "" {
			return v
		}
		return fromFile
	}
	s := Settings{
		Keeper:      pick(g.Keeper, EnvKeeper, file.Keeper),
		Token:       pick(g.Token, EnvToken, file.Token),
		Fingerprint: pick(g.Fingerprint, EnvFingerprint, file.Fingerprint),
		CAFile:      pick(g.CAFile, EnvCAFile, file.CAFile),
	}
	// A fingerprint or CA given closer to the command replaces the file's
	// trust entirely: the two are exclusive.
	if g.Fingerprint != "" || g.getenv(EnvFingerprint) != "" {
		if g.CAFile == "" && g.getenv(EnvCAFile) == "" {
			s.CAFile = ""
		}
	}
	if g.CAFile != "" || g.getenv(EnvCAFile) != "" {
		if g.Fingerprint == "" && g.getenv(EnvFingerprint) == "" {
			s.Fingerprint = ""
		}
	}
	return s, nil
}

// newClient builds an API client from settings.
func newClient(s Settings) (*apiclient.Client, error) {
	if s.Keeper == "" {
		return nil, cmdutil.Usage(errors.New("no Keeper: pass --keeper, set $SOULCTL_KEEPER or run `soulctl login` (keeper dev does it for you)"))
	}
	var opts []apiclient.Option
	switch {
	case s.Fingerprint != "" && s.CAFile != "":
		return nil, cmdutil.Usage(errors.New("--fingerprint and --ca-file are exclusive"))
	case s.Fingerprint != "":
		opts = append(opts, apiclient.WithFingerprint(s.Fingerprint))
	case s.CAFile != "":
		opts = append(opts, apiclient.WithCAFile(s.CAFile))
	}
	opts = append(opts, apiclient.WithUserAgent("soulctl"))
	c, err := apiclient.New(s.Keeper, s.Token, opts...)
	if err != nil {
		return nil, cmdutil.Usage(err)
	}
	return c, nil
}

// Client returns the API client of this invocation: Exec's, or one built
// from the merged settings. A missing token is an error here, except for
// commands that need none.
func (g *Globals) Client(_ context.Context) (*apiclient.Client, error) {
	if g.client != nil {
		return g.client, nil
	}
	s, err := g.Settings()
	if err != nil {
		return nil, err
	}
	if s.Keeper != "" && strings.TrimSpace(s.Token) == "" {
		return nil, cmdutil.Usage(errors.New("no token: pass --token, set $SOULCTL_TOKEN or run `soulctl login`"))
	}
	c, err := newClient(s)
	if err != nil {
		return nil, err
	}
	warnPlainHTTP(g.stderr, s.Keeper, s.Token)
	g.client = c
	return c, nil
}
