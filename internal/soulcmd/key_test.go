package soulcmd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/soul"
)

// `soul key` prints the soul's public key as PEM (what soulctl souls rekey
// --key-file takes, without openssl on the host) or as base64 (--key), and
// never makes a key of its own.
func TestKeyCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"key", "--data-dir", dir}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "no soul key") {
		t.Fatalf("soul key without a key: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, soul.KeyFile)); err == nil {
		t.Fatal("soul key created a key")
	}
	key, err := soul.LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := key.Public().(ed25519.PublicKey)

	out.Reset()
	if code := Main(context.Background(), []string{"key", "--data-dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("soul key: exit %d\n%s", code, errOut.String())
	}
	blk, _ := pem.Decode(out.Bytes())
	if blk == nil || blk.Type != "PUBLIC KEY" {
		t.Fatalf("soul key printed %q, want a PEM public key", out.String())
	}
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil || !want.Equal(pub) {
		t.Fatalf("soul key printed another key (%v)", err)
	}

	out.Reset()
	if code := Main(context.Background(), []string{"key", "--base64", "--data-dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("soul key --base64: exit %d\n%s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != base64.StdEncoding.EncodeToString(want) {
		t.Fatalf("soul key --base64 = %q", got)
	}
}
