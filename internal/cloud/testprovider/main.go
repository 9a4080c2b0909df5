// Command testprovider is an exec cloud provider for tests: its
// "instances" are soul processes on this machine, each confined to its own
// directory (soul --root), started with the bootstrap's join token and
// keeper URL. It speaks the exec protocol of internal/cloud for real, and
// can misbehave on purpose.
//
// Environment (the provider's config env): DIR holds the instances (one
// directory and one pid file each), SOUL is the soul binary, MODE is
// "" (behave), "hang" (start the soul, then never answer), "fail" (exit 3
// with a message on stderr), "garbage" (print text, not JSON), "fewer"
// (answer no instance) or "noconnect" (report the instance, start no soul).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type request struct {
	Op        string   `json:"op"`
	Names     []string `json:"names"`
	Bootstrap *struct {
		JoinToken string `json:"join_token"`
		KeeperURL string `json:"keeper_url"`
		UserData  string `json:"user_data"`
	} `json:"bootstrap"`
}

type instance struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Address string `json:"address"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testprovider:", err)
		os.Exit(3)
	}
}

func run() error {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	dir, mode := os.Getenv("DIR"), os.Getenv("MODE")
	if dir == "" {
		return errors.New("DIR is not set")
	}
	out := []instance{}
	switch req.Op {
	case "create":
		if mode == "fail" {
			return errors.New("quota exceeded: no room for " + strings.Join(req.Names, ", "))
		}
		if req.Bootstrap == nil || req.Bootstrap.JoinToken == "" || !strings.Contains(req.Bootstrap.UserData, "#cloud-config") {
			return errors.New("create without a bootstrap")
		}
		for _, n := range req.Names {
			pid := 0
			if mode != "noconnect" {
				p, err := startSoul(dir, n, req.Bootstrap.KeeperURL, req.Bootstrap.JoinToken)
				if err != nil {
					return err
				}
				pid = p
			}
			if err := os.WriteFile(filepath.Join(dir, n+".pid"), []byte(strconv.Itoa(pid)), 0o600); err != nil {
				return err
			}
			out = append(out, instance{Name: n, ID: "proc-" + strconv.Itoa(pid), Address: "127.0.0.1"})
		}
		switch mode {
		case "hang":
			time.Sleep(time.Hour)
		case "garbage":
			fmt.Println("Created! Have a nice day.")
			return nil
		case "fewer":
			out = out[:0]
		}
	case "list":
		for _, n := range req.Names {
			b, err := os.ReadFile(filepath.Join(dir, n+".pid"))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return err
			}
			out = append(out, instance{Name: n, ID: "proc-" + strings.TrimSpace(string(b)), Address: "127.0.0.1"})
		}
	case "delete":
		for _, n := range req.Names {
			if err := stopSoul(dir, n); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown op %q", req.Op)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// startSoul starts a soul for instance n in its own session, its output
// in a log file (never this program's stdout), and returns its PID.
func startSoul(dir, n, keeperURL, token string) (int, error) {
	d := filepath.Join(dir, n)
	if err := os.MkdirAll(filepath.Join(d, "root"), 0o700); err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, n+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.Command(os.Getenv("SOUL"), "run", "--keeper", keeperURL, "--sid", n, "--data-dir", d,
		"--root", filepath.Join(d, "root"), "--reconnect-min", "50ms", "--reconnect-max", "300ms")
	cmd.Env = append(os.Environ(), "SOUL_JOIN_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	return pid, cmd.Process.Release()
}

// stopSoul kills instance n's soul by its recorded PID and forgets it.
func stopSoul(dir, n string) error {
	b, err := os.ReadFile(filepath.Join(dir, n+".pid"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 100 && alive(pid); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
		return err
	}
	return os.Remove(filepath.Join(dir, n+".pid"))
}

// alive reports whether pid runs (a zombie waiting for its reaper is dead).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
