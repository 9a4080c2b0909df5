// Package cloud creates and deletes the instances of cloud providers
// (SPEC §10.6): the provider kinds (exec: any executable speaking a small
// JSON protocol; local: systemd hosts on the Keeper's own machine) behind
// one interface, the bootstrap each new instance gets (a one-time join
// token and a cloud-init user-data document installing the soul from the
// Keeper), and the instances recorded per incarnation.
package cloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// Provider kinds.
const (
	KindExec  = "exec"
	KindLocal = "local"
)

// DefaultExecTimeout bounds one call of an exec provider when its config
// sets no timeout.
const DefaultExecTimeout = 10 * time.Minute

// ExecConfig is the config of an exec provider.
type ExecConfig struct {
	// Executable is the absolute path of the provider program.
	Executable string `json:"executable"`
	// Args are given to it before nothing else (the op is in the request).
	Args []string `json:"args,omitempty"`
	// Env is added to its environment (API tokens of the platform CLI);
	// the values are masked in responses to non-admins and in the audit.
	Env map[string]string `json:"env,omitempty"`
	// Timeout bounds one call ("90s", "10m"); DefaultExecTimeout when empty.
	Timeout string `json:"timeout,omitempty"`
}

// LocalConfig is the config of a local provider.
type LocalConfig struct {
	// Dir keeps the hosts' state and overlay layers (default: the
	// Keeper's data dir/cloud-local/<provider>).
	Dir string `json:"dir,omitempty"`
}

// LocalSpec is the profile spec of a local provider.
type LocalSpec struct {
	// Rootfs is the directory holding the root filesystem the hosts boot
	// (systemd as PID 1), used read-only as the lower layer.
	Rootfs string `json:"rootfs"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// CheckName validates a provider, profile or instance name: a DNS label
// (an instance's name is its host name and its soul's SID).
func CheckName(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s name %q must be a DNS label: lowercase letters, digits and '-', at most 63, not starting or ending with '-'", what, name)
	}
	return nil
}

// strict decodes m into v refusing unknown fields.
func strict(m map[string]any, v any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ParseExec decodes and checks an exec provider's config.
func ParseExec(m map[string]any) (ExecConfig, time.Duration, error) {
	var c ExecConfig
	if err := strict(m, &c); err != nil {
		return c, 0, fmt.Errorf("exec provider config: %w (keys: executable, args, env, timeout)", err)
	}
	if c.Executable == "" || !filepath.IsAbs(c.Executable) {
		return c, 0, fmt.Errorf("exec provider config: executable must be an absolute path, not %q", c.Executable)
	}
	timeout := DefaultExecTimeout
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return c, 0, fmt.Errorf("exec provider config: timeout %q must be a positive duration such as 90s or 10m", c.Timeout)
		}
		timeout = d
	}
	return c, timeout, nil
}

// ParseLocal decodes and checks a local provider's config.
func ParseLocal(m map[string]any) (LocalConfig, error) {
	var c LocalConfig
	if err := strict(m, &c); err != nil {
		return c, fmt.Errorf("local provider config: %w (keys: dir)", err)
	}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		return c, fmt.Errorf("local provider config: dir must be an absolute path, not %q", c.Dir)
	}
	return c, nil
}

// ParseLocalSpec decodes and checks a local provider's profile spec.
func ParseLocalSpec(m map[string]any) (LocalSpec, error) {
	var s LocalSpec
	if err := strict(m, &s); err != nil {
		return s, fmt.Errorf("local profile spec: %w (keys: rootfs)", err)
	}
	if s.Rootfs == "" || !filepath.IsAbs(s.Rootfs) {
		return s, fmt.Errorf("local profile spec: rootfs must be the absolute path of a root filesystem directory, not %q", s.Rootfs)
	}
	return s, nil
}

// ValidateProvider checks a provider before it is stored.
func ValidateProvider(p store.CloudProvider) error {
	if err := CheckName("provider", p.Name); err != nil {
		return err
	}
	switch p.Kind {
	case KindExec:
		_, _, err := ParseExec(p.Config)
		return err
	case KindLocal:
		_, err := ParseLocal(p.Config)
		return err
	}
	return fmt.Errorf("provider kind must be %q or %q, not %q", KindExec, KindLocal, p.Kind)
}

// ValidateProfile checks a profile against its provider's kind.
func ValidateProfile(p store.CloudProfile, kind string) error {
	if err := CheckName("profile", p.Name); err != nil {
		return err
	}
	if kind == KindLocal {
		_, err := ParseLocalSpec(p.Spec)
		return err
	}
	return nil
}

// MaskProvider returns p with its secrets masked: every env value of an
// exec provider, and any value under a sensitive-looking key.
func MaskProvider(p store.CloudProvider) store.CloudProvider {
	p.Config = MaskConfig(p.Config)
	return p
}

// MaskConfig masks a provider config as MaskProvider does.
func MaskConfig(cfg map[string]any) map[string]any {
	if cfg == nil {
		return nil
	}
	out := auth.MaskMap(cfg)
	if env, ok := out["env"].(map[string]any); ok {
		m := make(map[string]any, len(env))
		for k := range env {
			m[k] = auth.Masked
		}
		out["env"] = m
	}
	return out
}

// MaskProfile masks the sensitive-looking keys of a profile's spec.
func MaskProfile(p store.CloudProfile) store.CloudProfile {
	p.Spec = auth.MaskMap(p.Spec)
	return p
}
