package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/install"
)

// newSoulsBootstrapCmd is `soulctl souls bootstrap`: agentless onboarding
// over SSH.
func newSoulsBootstrapCmd(g *Globals) *cobra.Command {
	var (
		targets    []string
		covens     []string
		o          install.BootstrapOptions
		keeperURLs []string
		root       string
		ttl, wait  time.Duration
	)
	c := &cobra.Command{
		Use:   "bootstrap --ssh [USER@]HOST[:PORT] ... [--covens a,b]",
		Short: "Install souls on hosts over SSH (agentless onboarding)",
		Long: `Installs a soul on each --ssh host that has none: creates one join token
(with --covens, usable once per host, --ttl), connects over SSH (host keys
checked against known_hosts; --accept-new-host-keys records unknown ones,
a changed key is always refused), runs the Keeper's install.sh there with
the token on its standard input, and waits up to --wait for each soul to
show up connected; the token is then revoked, unless an installed soul has
not joined yet (or --root installs an image). Hosts are worked on in parallel
(--parallel). One line per host: installed/connected, skipped (a soul is already there: --reinstall
replaces it) or failed with why. Exit 1 when any host failed.`,
		Example: `  soulctl souls bootstrap --ssh root@web-1 --ssh root@web-2:2222 --covens prod,web
  soulctl souls bootstrap --ssh admin@db-1 --sudo --identity ~/.ssh/id_ed25519 --accept-new-host-keys`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(targets) == 0 {
				return cmdutil.Usage(errors.New("give at least one --ssh [USER@]HOST[:PORT]"))
			}
			ts := make([]install.Target, len(targets))
			for i, s := range targets {
				t, err := install.ParseTarget(s)
				if err != nil {
					return cmdutil.Usage(err)
				}
				ts[i] = t
			}
			ctx := cmd.Context()
			cl, err := g.Client(ctx)
			if err != nil {
				return err
			}
			script, err := cl.InstallScript(ctx)
			if err != nil {
				return fmt.Errorf("fetching install.sh from the keeper: %w", err)
			}
			jt, err := cl.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: covens, TTL: apitypes.Duration(ttl), MaxUses: len(ts)})
			if err != nil {
				return fmt.Errorf("creating a join token: %w", err)
			}
			o.Script, o.JoinToken = script, jt.Token
			for _, u := range keeperURLs {
				o.InstallArgs = append(o.InstallArgs, "--keeper", u)
			}
			if root != "" {
				o.InstallArgs = append(o.InstallArgs, "--root", root)
			}
			res := install.Bootstrap(ctx, ts, o)
			if root == "" {
				awaitSouls(ctx, cl, res, wait)
			}
			failed, waiting := 0, false
			for _, r := range res {
				switch r.Status {
				case install.HostFailed:
					failed++
				case install.HostInstalled:
					// Installed, not connected yet (or an image under
					// --root): its soul still needs the token.
					waiting = true
				}
			}
			if !waiting {
				// Every soul that was to join has joined: a token left
				// valid for its TTL could only admit someone else.
				if err := cl.RevokeJoinToken(ctx, jt.ID); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "soulctl: revoking the bootstrap's join token %s: %v (revoke it: soulctl join-token revoke %s)\n", jt.ID, err, jt.ID)
				}
			}
			if err := g.Emit(cmd, res, func(w io.Writer) error {
				for _, r := range res {
					line := r.Target + ": " + r.Status
					if r.Hostname != "" {
						line += " (sid " + r.Hostname + ")"
					}
					if r.Message != "" {
						line += ": " + r.Message
					}
					fmt.Fprintln(w, line)
				}
				return nil
			}); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d hosts failed", failed, len(res))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVar(&targets, "ssh", nil, "host to install on: [USER@]HOST[:PORT] (repeatable; user root, port 22 by default)")
	f.StringSliceVar(&covens, "covens", nil, "covens the souls join (comma-separated)")
	f.StringVar(&o.SSH.IdentityFile, "identity", "", "SSH private key file (default: the ssh-agent)")
	f.StringVar(&o.SSH.KnownHosts, "known-hosts", "", "known_hosts file (default ~/.ssh/known_hosts)")
	f.BoolVar(&o.SSH.AcceptNewHostKeys, "accept-new-host-keys", false, "record the key of hosts known_hosts does not list (a changed key is still refused)")
	f.BoolVar(&o.SSH.Sudo, "sudo", false, "run the installer with sudo -n (for a non-root SSH user)")
	f.BoolVar(&o.Reinstall, "reinstall", false, "replace a soul already installed on a host")
	f.IntVar(&o.Parallel, "parallel", 10, "hosts worked on at once")
	f.DurationVar(&ttl, "ttl", time.Hour, "lifetime of the join token")
	f.DurationVar(&wait, "wait", time.Minute, "how long to wait for each installed soul to connect")
	f.StringArrayVar(&keeperURLs, "keeper-url", nil, "the Keeper's URL as the hosts reach it (default: the URL the Keeper advertises); repeat it for every keeper of a fleet, which the souls fail over along")
	f.StringVar(&root, "root", "", "install under this directory on the hosts and start nothing (images)")
	return c
}

// awaitSouls waits until each installed host's soul (SID = its hostname)
// is connected, noting in its message when it is not within wait.
func awaitSouls(ctx context.Context, cl *apiclient.Client, res []install.HostResult, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for i := range res {
		r := &res[i]
		if r.Status != install.HostInstalled || r.Hostname == "" {
			continue
		}
		for {
			s, err := cl.GetSoul(ctx, r.Hostname)
			if err == nil && s.Status == apitypes.SoulConnected {
				r.Status = "connected"
				r.Message = ""
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				r.Message = fmt.Sprintf("installed, but soul %s is not connected yet (soulctl souls show %s)", r.Hostname, r.Hostname)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}
