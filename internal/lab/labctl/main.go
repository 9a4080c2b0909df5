// Command labctl starts, enters and removes a lab of isolated Debian hosts
// (see package lab) for demos and debugging. It needs root.
//
//	labctl up   --name demo --hosts 3 [--flavour systemd|sysv] [--packages redis-server,redis-tools,hello] [--dir DIR]
//	labctl exec --name demo --host lab-host-1 [-- command args…]   (default: an interactive bash)
//	labctl status --name demo
//	labctl boot|shutdown|reboot --name demo --host lab-host-1
//	labctl down --name demo
//
// A lab started by up keeps running after labctl exits, until down (or a
// New with the same name) removes it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/soulstack/soulstack/internal/lab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  labctl up     --name NAME [--hosts N] [--flavour systemd|sysv] [--packages P,Q] [--dir DIR]
  labctl exec   --name NAME [--host HOST] [-- COMMAND ARGS...]
  labctl status --name NAME
  labctl boot|shutdown|reboot --name NAME --host HOST
  labctl down   --name NAME
`

// defaultPackages are what the e2e tests install: Redis, and a tiny
// package for package tests.
const defaultPackages = "redis-server,redis-tools,hello"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("labctl "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "demo", "lab name")
	hosts := fs.Int("hosts", 3, "number of hosts (up)")
	pkgs := fs.String("packages", defaultPackages, "comma-separated packages for the local repository (up)")
	dir := fs.String("dir", "", "directory for the hosts' file systems (up; default /var/lib/soulstack-lab/labs/NAME)")
	host := fs.String("host", "lab-host-1", "host to run the command in (exec)")
	flavour := fs.String("flavour", lab.FlavourSystemd, "hosts' init: systemd (systemd as PID 1) or sysv (tini and init scripts) (up)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var err error
	switch args[0] {
	case "up":
		err = up(ctx, lab.Config{Name: *name, Hosts: *hosts, Dir: *dir, Packages: splitList(*pkgs), Flavour: *flavour}, stdout)
	case "down":
		err = lab.Cleanup(ctx, *name)
		if err == nil {
			fmt.Fprintf(stdout, "lab %s removed\n", *name)
		}
	case "status":
		var l *lab.Lab
		if l, err = lab.Attach(*name); err == nil {
			describe(l, stdout)
		}
	case "exec":
		return execIn(ctx, *name, *host, fs.Args(), stdout, stderr)
	case "boot", "shutdown", "reboot":
		err = power(ctx, args[0], *name, *host, stdout)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "labctl: %v\n", err)
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func up(ctx context.Context, cfg lab.Config, stdout io.Writer) error {
	l, err := lab.New(ctx, cfg)
	if err != nil {
		return err
	}
	describe(l, stdout)
	st := l.Stats()
	fmt.Fprintf(stdout, "\nbase  %s (%s in %v)\n", l.BaseDir(), builtOrCached(st.BaseBuilt), st.Base.Round(1e6))
	fmt.Fprintf(stdout, "repo  %s (%s in %v)\n", l.RepoDir(), builtOrCached(st.RepoBuilt), st.Repo.Round(1e6))
	fmt.Fprintf(stdout, "hosts started in %v\n", st.Hosts.Round(1e6))
	fmt.Fprintf(stdout, "\nenter: labctl exec --name %s --host %s\nstop:  labctl down --name %s\n",
		l.Name(), l.Hosts()[0].Name(), l.Name())
	// The lab is left running on purpose: down removes it.
	return nil
}

func builtOrCached(built bool) string {
	if built {
		return "built"
	}
	return "cached"
}

func describe(l *lab.Lab, w io.Writer) {
	fmt.Fprintf(w, "lab %s: %d %s hosts on bridge %s, subnet %s, gateway (Keeper) %s\n",
		l.Name(), len(l.Hosts()), l.Flavour(), l.Bridge(), l.Subnet(), l.GatewayIP())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tIP\tNETNS\tVETH\tINIT PID\tROOT")
	for _, h := range l.Hosts() {
		pid := "down"
		if p := h.InitPID(); p != 0 {
			pid = fmt.Sprint(p)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Name(), h.IP(), h.NetNS(), h.Veth(), pid, h.RootDir())
	}
	tw.Flush()
}

func execIn(ctx context.Context, name, host string, argv []string, stdout, stderr io.Writer) int {
	l, err := lab.Attach(name)
	if err != nil {
		fmt.Fprintf(stderr, "labctl: %v\n", err)
		return 1
	}
	h := l.Host(host)
	if h == nil {
		fmt.Fprintf(stderr, "labctl: lab %s has no host %s\n", name, host)
		return 1
	}
	if len(argv) == 0 {
		argv = []string{"/bin/bash", "-l"}
	}
	cmd, err := h.Command(ctx, argv...)
	if err != nil {
		fmt.Fprintf(stderr, "labctl: %v\n", err)
		return 1
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = append(cmd.Env, "TERM="+os.Getenv("TERM"))
	// An interactive shell needs the terminal's foreground process group.
	cmd.SysProcAttr = nil
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	err = cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		fmt.Fprintf(stderr, "labctl: %v\n", err)
		return 1
	}
	return 0
}

// power boots, cleanly stops or reboots one host of a running lab. A
// reboot asked from inside a host of a lab that labctl up started is not
// completed by anyone (labctl has exited): boot the host with this.
func power(ctx context.Context, op, name, host string, stdout io.Writer) error {
	l, err := lab.Attach(name)
	if err != nil {
		return err
	}
	h := l.Host(host)
	if h == nil {
		return fmt.Errorf("lab %s has no host %s", name, host)
	}
	switch op {
	case "boot":
		err = h.Boot(ctx)
	case "shutdown":
		err = h.Shutdown(ctx)
	default:
		err = h.Reboot(ctx)
	}
	if err == nil {
		fmt.Fprintf(stdout, "%s: %s done (init pid %d)\n", host, op, h.InitPID())
	}
	return err
}
