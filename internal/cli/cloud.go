package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newCloudCmd) }

// newCloudCmd is `soulctl cloud`: providers, profiles and the instances
// they made (SPEC §10.6).
func newCloudCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "cloud",
		Short: "Cloud providers and profiles used by core.cloud.created, and the instances they made",
		Long: `A provider is an "exec" program speaking a small JSON protocol (any platform
CLI, Terraform, the virtualization platform) or "local" (systemd hosts on the
Keeper's own machine, for development and tests). A profile names a provider,
the spec of the instances it makes and the covens their souls join with.
Scenarios create instances with core.cloud.created (on: keeper).`,
	}
	prov := &cobra.Command{Use: "provider", Aliases: []string{"providers"}, Short: "Register, list, show and delete cloud providers"}
	prov.AddCommand(newCloudProviderSetCmd(g), newCloudListCmd(g, "provider"), newCloudShowCmd(g, "provider"), newCloudDeleteCmd(g, "provider"))
	prof := &cobra.Command{Use: "profile", Aliases: []string{"profiles"}, Short: "Register, list, show and delete cloud profiles"}
	prof.AddCommand(newCloudProfileSetCmd(g), newCloudListCmd(g, "profile"), newCloudShowCmd(g, "profile"), newCloudDeleteCmd(g, "profile"))
	inst := &cobra.Command{Use: "instance", Aliases: []string{"instances"}, Short: "List the instances recorded per incarnation"}
	inst.AddCommand(newCloudInstanceListCmd(g))
	c.AddCommand(prov, prof, inst)
	return c
}

// readMapFile reads a JSON or YAML object from path ("-" = stdin).
func readMapFile(g *Globals, path string) (map[string]any, error) {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(g.stdin(), 1<<20))
	} else {
		b, err = g.readLocalFile(path, path)
	}
	if err != nil {
		return nil, cmdutil.Usage(fmt.Errorf("reading %s: %w", path, err))
	}
	var m map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil && err != io.EOF {
		return nil, cmdutil.Usage(fmt.Errorf("%s: not a JSON or YAML object: %w", path, err))
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// readEnvFile reads KEY=VALUE lines (blank lines and # comments skipped).
func readEnvFile(g *Globals, path string, into map[string]any) error {
	b, err := g.readLocalFile("--env-file", path)
	if err != nil {
		return cmdutil.Usage(fmt.Errorf("--env-file: %w", err))
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return cmdutil.Usage(fmt.Errorf("%s:%d: want KEY=VALUE", path, n))
		}
		into[k] = v
	}
	return sc.Err()
}

func newCloudProviderSetCmd(g *Globals) *cobra.Command {
	var (
		kind, executable, timeout, dir, configFile, envFile string
		args, env                                           []string
	)
	c := &cobra.Command{
		Use:   "set NAME --kind exec|local [flags]",
		Short: "Register or replace a cloud provider (admin)",
		Long: `--config-file gives the whole config as JSON or YAML ("-" = stdin); the other
flags set or override its keys. exec: --executable (absolute path), --arg
(repeatable), --env KEY=VALUE or --env-file (platform credentials; sealed
in the database and shown as **** to everyone; a value given as **** keeps
the stored one), --timeout per call (default 10m).
local: --dir where the hosts live (default: the Keeper's data dir).`,
		Example: `  soulctl cloud provider set hetzner --kind exec --executable /usr/local/bin/hcloud-provider --env-file hcloud.env --timeout 5m
  soulctl cloud provider set lab --kind local`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := notInProcedure(g, "cloud provider set"); err != nil {
				return err
			}
			cfg := map[string]any{}
			if configFile != "" {
				m, err := readMapFile(g, configFile)
				if err != nil {
					return err
				}
				cfg = m
			}
			if executable != "" {
				cfg["executable"] = executable
			}
			if len(args) > 0 {
				cfg["args"] = args
			}
			if timeout != "" {
				cfg["timeout"] = timeout
			}
			if dir != "" {
				cfg["dir"] = dir
			}
			if len(env) > 0 || envFile != "" {
				e, _ := cfg["env"].(map[string]any)
				if e == nil {
					e = map[string]any{}
				}
				if envFile != "" {
					if err := readEnvFile(g, envFile, e); err != nil {
						return err
					}
				}
				for _, kv := range env {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return cmdutil.Usage(fmt.Errorf("--env %q: want KEY=VALUE", kv))
					}
					e[k] = v
				}
				cfg["env"] = e
			}
			if kind == "" {
				return cmdutil.Usage(fmt.Errorf("--kind is required: exec or local"))
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			p, err := cl.SetCloudProvider(cmd.Context(), a[0], apitypes.CloudProviderRequest{Kind: kind, Config: cfg})
			if err != nil {
				return err
			}
			return g.Emit(cmd, p, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "cloud provider %s (%s) set\n", p.Name, p.Kind)
				return err
			})
		},
	}
	f := c.Flags()
	f.StringVar(&kind, "kind", "", "provider kind: exec or local")
	f.StringVar(&configFile, "config-file", "", "the whole config as a JSON or YAML object (\"-\" = stdin)")
	f.StringVar(&executable, "executable", "", "exec: absolute path of the provider program")
	f.StringArrayVar(&args, "arg", nil, "exec: an argument of the program (repeatable)")
	f.StringArrayVar(&env, "env", nil, "exec: KEY=VALUE added to its environment (repeatable; prefer --env-file for credentials)")
	f.StringVar(&envFile, "env-file", "", "exec: KEY=VALUE lines added to its environment")
	f.StringVar(&timeout, "timeout", "", "exec: bound of one call, e.g. 5m (default 10m)")
	f.StringVar(&dir, "dir", "", "local: directory of the hosts' state")
	return c
}

func newCloudProfileSetCmd(g *Globals) *cobra.Command {
	var (
		provider, specFile, rootfs string
		spec, covens               []string
	)
	c := &cobra.Command{
		Use:   "set NAME --provider P [flags]",
		Short: "Register or replace a cloud profile (admin)",
		Long: `--spec-file gives the provider-specific spec as JSON or YAML ("-" = stdin);
--spec KEY=VALUE sets string keys of it; --rootfs is the local kind's root
filesystem directory. --covens are the covens the instances' souls join with
(besides the incarnation's).`,
		Example: `  soulctl cloud profile set small --provider hetzner --spec type=cx22 --spec image=debian-12 --covens web
  soulctl cloud profile set labhost --provider lab --rootfs /var/lib/soulstack/rootfs/bookworm`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := notInProcedure(g, "cloud profile set"); err != nil {
				return err
			}
			sp := map[string]any{}
			if specFile != "" {
				m, err := readMapFile(g, specFile)
				if err != nil {
					return err
				}
				sp = m
			}
			for _, kv := range spec {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return cmdutil.Usage(fmt.Errorf("--spec %q: want KEY=VALUE", kv))
				}
				sp[k] = v
			}
			if rootfs != "" {
				sp["rootfs"] = rootfs
			}
			if provider == "" {
				return cmdutil.Usage(fmt.Errorf("--provider is required"))
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			p, err := cl.SetCloudProfile(cmd.Context(), a[0], apitypes.CloudProfileRequest{Provider: provider, Spec: sp, Covens: covens})
			if err != nil {
				return err
			}
			return g.Emit(cmd, p, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "cloud profile %s (provider %s) set\n", p.Name, p.Provider)
				return err
			})
		},
	}
	f := c.Flags()
	f.StringVar(&provider, "provider", "", "the provider that makes the instances")
	f.StringVar(&specFile, "spec-file", "", "the spec as a JSON or YAML object (\"-\" = stdin)")
	f.StringArrayVar(&spec, "spec", nil, "KEY=VALUE of the spec (repeatable)")
	f.StringVar(&rootfs, "rootfs", "", "local: the root filesystem directory the hosts boot")
	f.StringSliceVar(&covens, "covens", nil, "covens the instances' souls join with (comma-separated)")
	return c
}

func newCloudListCmd(g *Globals, what string) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List cloud " + what + "s",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if what == "provider" {
				list, err := cl.ListCloudProviders(cmd.Context())
				if err != nil {
					return err
				}
				if list == nil {
					list = []apitypes.CloudProvider{}
				}
				return g.Emit(cmd, list, func(w io.Writer) error {
					row(w, "NAME", "KIND", "CONFIG", "UPDATED")
					for _, p := range list {
						row(w, p.Name, p.Kind, dash(flatMap(p.Config)), ago(p.UpdatedAt))
					}
					return nil
				})
			}
			list, err := cl.ListCloudProfiles(cmd.Context())
			if err != nil {
				return err
			}
			if list == nil {
				list = []apitypes.CloudProfile{}
			}
			return g.Emit(cmd, list, func(w io.Writer) error {
				row(w, "NAME", "PROVIDER", "COVENS", "SPEC", "UPDATED")
				for _, p := range list {
					row(w, p.Name, p.Provider, dash(strings.Join(p.Covens, ",")), dash(flatMap(p.Spec)), ago(p.UpdatedAt))
				}
				return nil
			})
		},
	}
}

// flatMap shows a map on one line: k=v pairs sorted by key.
func flatMap(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, " ")
}

func newCloudShowCmd(g *Globals, what string) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a cloud " + what,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			var v any
			if what == "provider" {
				v, err = cl.GetCloudProvider(cmd.Context(), a[0])
			} else {
				v, err = cl.GetCloudProfile(cmd.Context(), a[0])
			}
			if err != nil {
				return err
			}
			return g.Emit(cmd, v, func(w io.Writer) error {
				out, err := yaml.Marshal(v)
				if err != nil {
					return err
				}
				_, err = w.Write(out)
				return err
			})
		},
	}
}

func newCloudDeleteCmd(g *Globals, what string) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a cloud " + what + " (admin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := notInProcedure(g, "cloud "+what+" delete"); err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if what == "provider" {
				err = cl.DeleteCloudProvider(cmd.Context(), a[0])
			} else {
				err = cl.DeleteCloudProfile(cmd.Context(), a[0])
			}
			if err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"deleted": a[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "cloud %s %s deleted\n", what, a[0])
				return err
			})
		},
	}
}

func newCloudInstanceListCmd(g *Globals) *cobra.Command {
	var inc string
	c := &cobra.Command{
		Use:     "list [--incarnation NAME]",
		Aliases: []string{"ls"},
		Short:   "List the cloud instances recorded per incarnation",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := cl.ListCloudInstances(cmd.Context(), inc)
			if err != nil {
				return err
			}
			if list == nil {
				list = []apitypes.CloudInstance{}
			}
			return g.Emit(cmd, list, func(w io.Writer) error {
				row(w, "INCARNATION", "PROVIDER", "NAME", "ID", "ADDRESS", "SID", "CREATED")
				for _, in := range list {
					row(w, in.Incarnation, in.Provider, in.Name, dash(in.ID), dash(in.Address), dash(in.SID), ago(in.CreatedAt))
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&inc, "incarnation", "", "only this incarnation's instances")
	return c
}

// notInProcedure refuses changes of providers and profiles inside a
// Checker procedure: which programs the Keeper runs for cloud providers
// is an admin's decision at the API, not a runbook's.
func notInProcedure(g *Globals, what string) error {
	if g.capture {
		return cmdutil.Usage(fmt.Errorf("%s is not available in procedures", what))
	}
	return nil
}
