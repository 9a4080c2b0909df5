package soulcmd

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/soul"
)

func init() { subcommands = append(subcommands, newKeyCmd) }

// newKeyCmd is `soul key`: print the soul's public key in the form
// `soulctl souls rekey` takes, so a reinstalled host needs no openssl.
func newKeyCmd() *cobra.Command {
	var dataDir string
	var b64 bool
	c := &cobra.Command{
		Use:   "key",
		Short: "Print this soul's public key (for soulctl souls rekey)",
		Long: "Prints the public half of the soul's Ed25519 key from --data-dir as PEM, the form\n" +
			"`soulctl souls rekey <sid> --key-file` takes (--base64: the base64 of its 32 bytes, for\n" +
			"--key). It never creates a key: a soul that has not run yet has none.",
		Example: "  soul key > soul.pub    # then: soulctl souls rekey web-3 --key-file soul.pub",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			path := filepath.Join(dataDir, soul.KeyFile)
			if _, err := os.Stat(path); err != nil {
				return cmdutil.Failed(fmt.Errorf("no soul key: %w (the soul creates it when it first runs)", err))
			}
			key, err := soul.LoadOrCreateKey(dataDir)
			if err != nil {
				return cmdutil.Failed(err)
			}
			pub := key.Public().(ed25519.PublicKey)
			w := c.OutOrStdout()
			if b64 {
				_, err := fmt.Fprintln(w, base64.StdEncoding.EncodeToString(pub))
				return err
			}
			der, err := x509.MarshalPKIXPublicKey(pub)
			if err != nil {
				return cmdutil.Failed(fmt.Errorf("encoding the public key: %w", err))
			}
			_, err = w.Write(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
			return err
		},
	}
	c.Flags().StringVar(&dataDir, "data-dir", "/var/lib/soulstack/soul", "the soul's data directory (where soul.key is)")
	c.Flags().BoolVar(&b64, "base64", false, "print the base64 of the 32-byte key instead of PEM")
	return c
}
