package cli_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// TestL2SoulsDeleteAndRekey: audit L2 — a SID a squatter registered and an
// admin rejected can be freed (`souls delete`) or moved to the real
// host's key (`souls rekey`); operators may do neither.
func TestL2SoulsDeleteAndRekey(t *testing.T) {
	k := startKeeper(t)
	ctx := context.Background()
	st := k.K.Store()
	now := time.Now().UTC()
	for _, sid := range []string{"squat-5", "web-3"} {
		if err := st.UpsertSoul(ctx, store.Soul{SID: sid, PublicKey: []byte("squatter-key-0123456789abcdef012"), Status: store.SoulRejected,
			Covens: []string{"web"}, LastSeen: now, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	op := k.ctl(t, "archon", "create", "olga", "--role", "operator", "-o", "json").must(t)
	var olga apitypes.CreatedArchon
	if err := json.Unmarshal([]byte(op.Stdout), &olga); err != nil {
		t.Fatal(err)
	}
	asOlga := func(args ...string) ctlResult {
		return ctl(t, nil, "", append([]string{"--keeper", k.URL, "--token", olga.Token.Token}, args...)...)
	}
	if r := asOlga("souls", "delete", "squat-5"); r.Code != 1 || !strings.Contains(r.Stderr, "403") {
		t.Fatalf("souls delete as an operator: exit %d\n%s", r.Code, r.Stderr)
	}

	// delete: the SID is gone, so the real host can join again.
	d := k.ctl(t, "souls", "delete", "squat-5").must(t)
	if !strings.Contains(d.Stdout, "soul squat-5 deleted") {
		t.Errorf("souls delete output: %q", d.Stdout)
	}
	if _, err := st.GetSoul(ctx, "squat-5"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("squat-5 after delete: %v", err)
	}
	if r := k.ctl(t, "souls", "delete", "squat-5"); r.Code != 1 || !strings.Contains(r.Stderr, "404") {
		t.Errorf("deleting a deleted soul: exit %d\n%s", r.Code, r.Stderr)
	}

	// rekey: the real host's public key, as openssl -pubout writes it.
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(t.TempDir(), "web-3.pub")
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := asOlga("souls", "rekey", "web-3", "--key-file", pubFile); r.Code != 1 || !strings.Contains(r.Stderr, "403") {
		t.Fatalf("souls rekey as an operator: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := k.ctl(t, "souls", "rekey", "web-3", "--key", "not-a-key"); r.Code != 2 || !strings.Contains(r.Stderr, "400") {
		t.Errorf("rekey with a bad key: exit %d\n%s", r.Code, r.Stderr)
	}
	k.ctl(t, "souls", "rekey", "web-3", "--key-file", pubFile).must(t)
	s, err := st.GetSoul(ctx, "web-3")
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.PublicKey(s.PublicKey).Equal(pub) || strings.Join(s.Covens, ",") != "web" {
		t.Fatalf("web-3 after rekey: key %x, covens %v", s.PublicKey, s.Covens)
	}
	audit := k.ctl(t, "audit", "list", "-o", "json").must(t)
	if !strings.Contains(audit.Stdout, "DELETE /v1/souls/{sid}") || !strings.Contains(audit.Stdout, domain.KeyFingerprint(pub)) {
		t.Errorf("audit lacks the delete or the new key:\n%s", audit.Stdout)
	}
}
