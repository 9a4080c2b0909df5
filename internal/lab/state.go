package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// labState records what a lab created, written before it is created, so
// Cleanup can find it after a crash and labctl can attach to a running lab.
type labState struct {
	Name   string `json:"name"`
	Dir    string `json:"dir"`
	Base   string `json:"base"`
	Repo   string `json:"repo"`
	Bridge string `json:"bridge"`
	Subnet string `json:"subnet,omitempty"`
	// Flavour is the hosts' init; empty in the state of an older lab
	// (sysv).
	Flavour string      `json:"flavour,omitempty"`
	Hosts   []hostState `json:"hosts"`
}

type hostState struct {
	Name    string `json:"name"`
	NetNS   string `json:"netns"`
	Veth    string `json:"veth"`
	IP      string `json:"ip"`
	InitPID int    `json:"init_pid,omitempty"`
}

func readState(n names) (*labState, error) {
	data, err := os.ReadFile(n.statePath())
	if err != nil {
		return nil, err
	}
	var st labState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", n.statePath(), err)
	}
	return &st, nil
}

// writeState replaces the state file atomically.
func writeState(n names, st *labState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("writing lab state: %w", err)
	}
	tmp, err := os.CreateTemp(runDir, filepath.Base(n.statePath())+".tmp-")
	if err != nil {
		return fmt.Errorf("writing lab state: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing lab state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing lab state: %w", err)
	}
	if err := os.Rename(tmp.Name(), n.statePath()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing lab state: %w", err)
	}
	return nil
}
