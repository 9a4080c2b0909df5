package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newSecretCmd) }

// maxSecretInput bounds what `secret set` reads (the Keeper refuses more
// than 64 KiB anyway).
const maxSecretInput = 1 << 20

// newSecretCmd is `soulctl secret`: the Keeper's secret store (SPEC §10.5).
func newSecretCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "secret",
		Aliases: []string{"secrets"},
		Short:   "Set, list and delete the Keeper's secrets (values are never shown)",
		Long: `The Keeper keeps secrets encrypted at rest (XChaCha20-Poly1305, key file
secrets.key beside the signing key). Scenarios read them with
secret("name"); every value computed from one is masked as **** in results,
diffs, events, history, logs and the UI. No command or route shows a value.`,
	}
	c.AddCommand(newSecretSetCmd(g), newSecretListCmd(g), newSecretDeleteCmd(g))
	return c
}

func newSecretSetCmd(g *Globals) *cobra.Command {
	var fromFile, scope string
	c := &cobra.Command{
		Use:   "set NAME [--from-file PATH] [--scope SCOPE]",
		Short: "Set or replace a secret (admin); the value comes from stdin or a file, never a flag",
		Long: `Reads the value from standard input (one trailing newline is dropped) or,
with --from-file, from a file (taken byte for byte). Runs that start later
use the new value; runs in flight keep the one they started with.
--scope service:NAME or incarnation:NAME lets only that service's (or
incarnation's) scenarios read the secret, checked when a run is validated
and again when it starts; keeper (the default for a new secret) lets every
scenario read it. Without --scope an existing secret keeps its scope.`,
		Example: `  printf %s "$DB_PASSWORD" | soulctl secret set db_password
  soulctl secret set tls_key --from-file ./server.key
  soulctl secret set pg_password --scope service:postgres < pw.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.capture {
				return cmdutil.Usage(errors.New("secret set is not available in procedures"))
			}
			var (
				b   []byte
				err error
			)
			if fromFile != "" {
				b, err = readLimited(fromFile)
			} else {
				b, err = io.ReadAll(io.LimitReader(g.stdin(), maxSecretInput+1))
				s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
				b = []byte(s)
			}
			if err != nil {
				return fmt.Errorf("reading the secret's value: %w", err)
			}
			if len(b) > maxSecretInput {
				return cmdutil.Usage(fmt.Errorf("the value has more than %d bytes", maxSecretInput))
			}
			if len(b) == 0 {
				return cmdutil.Usage(errors.New("the value is empty: give it on stdin or with --from-file"))
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			rec, err := cl.SetScopedSecret(cmd.Context(), args[0], string(b), scope)
			if err != nil {
				return err
			}
			return g.Emit(cmd, rec, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "secret %s set\n", rec.Name)
				return err
			})
		},
	}
	c.Flags().StringVar(&fromFile, "from-file", "", "read the value from this file (byte for byte)")
	c.Flags().StringVar(&scope, "scope", "", "who may read it: keeper, service:NAME or incarnation:NAME")
	return c
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSecretInput+1))
}

func newSecretListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the secrets: names, owners, times, the scenarios and procedures using them (operator)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := cl.ListSecrets(cmd.Context())
			if err != nil {
				return err
			}
			if list == nil {
				list = []apitypes.Secret{}
			}
			return g.Emit(cmd, list, func(w io.Writer) error {
				row(w, "NAME", "SCOPE", "OWNER", "CREATED", "UPDATED", "USED BY")
				for _, s := range list {
					row(w, s.Name, dash(s.Scope), dash(s.Owner), ago(s.CreatedAt), ago(s.UpdatedAt), dash(strings.Join(s.UsedBy, ",")))
				}
				return nil
			})
		},
	}
}

func newSecretDeleteCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a secret (admin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := cl.DeleteSecret(cmd.Context(), args[0]); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"deleted": args[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "secret %s deleted\n", args[0])
				return err
			})
		},
	}
}
