package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
)

// newSoulsDeleteCmd is `soulctl souls delete`: forget a soul (admin), so a
// reinstalled host or a squatted SID can join again (audit L2).
func newSoulsDeleteCmd(g *Globals) *cobra.Command {
	var sid string
	c := &cobra.Command{
		Use:   "delete [sid]",
		Short: "Forget a soul: its key binding, covens and incarnation memberships (admin)",
		Long: `Forgets a soul: its key binding, its covens and its incarnation memberships
(the audit log names the incarnations). Its stream is closed; the host may
join again, as a new soul (with a join token, or pending until accepted).
Use it for a reinstalled host with a new key, or a SID a stranger said hello
under first.`,
		Example: `  soulctl souls delete web-3`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, cl, err := g.nameAndClient(cmd, args, sid, "sid")
			if err != nil {
				return err
			}
			d, err := cl.DeleteSoul(cmd.Context(), id)
			if err != nil {
				return err
			}
			return g.Emit(cmd, d, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "soul %s deleted", d.SID)
				if err == nil && len(d.Incarnations) > 0 {
					_, err = fmt.Fprintf(w, " (removed from incarnations %s)", strings.Join(d.Incarnations, ", "))
				}
				if err == nil {
					_, err = fmt.Fprintln(w)
				}
				return err
			})
		},
	}
	addNameFlag(c, &sid, "sid", "soul SID")
	return c
}

// newSoulsRekeyCmd is `soulctl souls rekey`: bind a SID to a new key.
func newSoulsRekeyCmd(g *Globals) *cobra.Command {
	var sid, key, keyFile string
	c := &cobra.Command{
		Use:   "rekey [sid] (--key-file FILE | --key KEY)",
		Short: "Bind a soul's SID to a new public key, keeping its covens and memberships (admin)",
		Long: `Binds a soul's SID to a new Ed25519 public key, keeping its covens and
incarnation memberships: a reinstalled host keeps its place. The key is the
soul's public key as PEM (on the host: soul key > soul.pub; no openssl
needed) or the base64 of its 32 bytes (soul key --base64). A
stream under the old key is closed.`,
		Example: `  soulctl souls rekey web-3 --key-file web-3.pub`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (key == "") == (keyFile == "") {
				return cmdutil.Usage(errors.New("give the new public key with --key-file or --key (one of them)"))
			}
			if keyFile != "" {
				b, err := os.ReadFile(keyFile)
				if err != nil {
					return cmdutil.Usage(fmt.Errorf("--key-file: %w", err))
				}
				key = string(b)
			}
			id, cl, err := g.nameAndClient(cmd, args, sid, "sid")
			if err != nil {
				return err
			}
			s, err := cl.RekeySoul(cmd.Context(), id, key)
			if err != nil {
				return err
			}
			return g.Emit(cmd, s, func(w io.Writer) error { return soulLine(w, "rekeyed", s) })
		},
	}
	addNameFlag(c, &sid, "sid", "soul SID")
	c.Flags().StringVar(&key, "key", "", "the new public key: PEM or base64")
	c.Flags().StringVar(&keyFile, "key-file", "", "file holding the new public key (PEM)")
	return c
}
