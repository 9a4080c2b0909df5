package config

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"go.yaml.in/yaml/v3"
)

// Size is a byte count written as "16MiB", "512MB" or a plain number in
// YAML and flags.
type Size int64

// String renders s in IEC units ("16 MiB").
func (s Size) String() string { return humanize.IBytes(uint64(s)) }

// Set parses a flag value.
func (s *Size) Set(v string) error {
	n, err := humanize.ParseBytes(v)
	if err != nil || n > 1<<62 {
		return fmt.Errorf("invalid size %q: use 16MiB, 512MB, 2GiB", v)
	}
	*s = Size(n)
	return nil
}

// Type names the flag type.
func (s *Size) Type() string { return "size" }

// UnmarshalYAML reads a size.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if err := s.Set(n.Value); err != nil {
		return &valueError{line: n.Line, col: n.Column, err: err}
	}
	return nil
}

// MarshalYAML writes s as a size string.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }
