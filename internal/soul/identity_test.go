package soul

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

func TestLoadOrCreateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k1, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode = %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode = %v", st.Mode().Perm())
	}
	k2, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equal(k2) {
		t.Fatal("reloaded key differs")
	}
	os.WriteFile(filepath.Join(dir, KeyFile), []byte("garbage"), 0o600)
	if _, err := LoadOrCreateKey(dir); err == nil {
		t.Fatal("corrupt key accepted")
	}
}

func TestResolveTrust(t *testing.T) {
	m, _ := tlsutil.Generate(nil)
	fp, _ := m.Fingerprint()
	other, _ := tlsutil.Generate(nil)
	otherFP, _ := other.Fingerprint()
	secret, _ := jointoken.NewSecret()
	tok := jointoken.Encode(secret, fp)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	os.WriteFile(caFile, m.CACertPEM, 0o644)
	pinned := t.TempDir()
	if err := persistFingerprint(pinned, fp); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		cfg         Config
		wantFP      string
		wantPersist bool
		wantErr     string
	}{
		{"ca file", Config{CAFile: caFile, DataDir: t.TempDir()}, fp, false, ""},
		{"fingerprint", Config{Fingerprint: strings.ToUpper(fp), DataDir: t.TempDir()}, fp, true, ""},
		{"join token", Config{JoinToken: tok, DataDir: t.TempDir()}, fp, true, ""},
		{"token and the same fingerprint", Config{JoinToken: tok, Fingerprint: fp, DataDir: t.TempDir()}, fp, true, ""},
		{"token and another fingerprint", Config{JoinToken: tok, Fingerprint: otherFP, DataDir: t.TempDir()}, "", false, "differs"},
		{"pinned at first join", Config{DataDir: pinned}, fp, false, ""},
		{"explicit beats pinned", Config{DataDir: pinned, Fingerprint: otherFP}, otherFP, true, ""},
		{"nothing", Config{DataDir: t.TempDir()}, "", false, "no way to trust"},
		{"bad token", Config{JoinToken: "SSJ1.x.y", DataDir: t.TempDir()}, "", false, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := resolveTrust(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.fingerprint != tt.wantFP || tr.persist != tt.wantPersist || tr.tls == nil {
				t.Fatalf("trust = %s persist=%v, want %s persist=%v", tr.fingerprint, tr.persist, tt.wantFP, tt.wantPersist)
			}
		})
	}
}

func TestNewAgentValidates(t *testing.T) {
	m, _ := tlsutil.Generate(nil)
	fp, _ := m.Fingerprint()
	dir := t.TempDir()
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{KeeperURL: "https://k:1", DataDir: dir, Fingerprint: fp}, "SID"},
		{Config{KeeperURL: "https://k:1", SID: "s", Fingerprint: fp}, "data directory"},
		{Config{KeeperURL: "http://k:1", SID: "s", DataDir: dir, Fingerprint: fp}, "must be https"},
		{Config{KeeperURL: "::", SID: "s", DataDir: dir, Fingerprint: fp}, "invalid keeper URL"},
		{Config{KeeperURL: "https://k:1", SID: "s", DataDir: dir}, "no way to trust"},
	} {
		if _, err := NewAgent(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewAgent(%+v) err = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	root := filepath.Join(dir, "root")
	a, err := NewAgent(Config{KeeperURL: "https://k:1", SID: "s", DataDir: dir, Fingerprint: fp, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		t.Fatalf("root not created: %v", err)
	}
	if a.SID() != "s" || len(a.PublicKey()) != 32 {
		t.Fatalf("agent %s key %x", a.SID(), a.PublicKey())
	}
}

func TestBackoff(t *testing.T) {
	a := &Agent{cfg: Config{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}}
	for n := range 12 {
		base := min(100*time.Millisecond<<n, time.Second)
		for range 50 {
			if d := a.backoff(n); d < base/2 || d > base {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", n, d, base/2, base)
			}
		}
	}
}
