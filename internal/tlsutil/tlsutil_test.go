package tlsutil

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve starts a TLS listener on 127.0.0.1:0 that completes handshakes
// with m's server configuration, and returns its address.
func serve(t *testing.T, m *Material) string {
	t.Helper()
	cfg, err := m.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func handshake(addr string, cfg *tls.Config) error {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	return c.Close()
}

func TestGenerateSaveLoad(t *testing.T) {
	m, err := Generate([]string{"keeper.example", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tls")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{CACertFile: 0o644, CAKeyFile: 0o600, ServerCertFile: 0o644, ServerKeyFile: 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", name, st.Mode().Perm(), want)
		}
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	fp1, _ := m.Fingerprint()
	fp2, err := loaded.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	if fp1 != fp2 || len(fp1) != 64 || strings.ToLower(fp1) != fp1 {
		t.Fatalf("fingerprints %q / %q", fp1, fp2)
	}
	srv, err := ParseCertPEM(m.ServerCertPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"keeper.example", "localhost", "127.0.0.1", "10.1.2.3"} {
		if err := srv.VerifyHostname(h); err != nil {
			t.Errorf("server cert lacks SAN %s: %v", h, err)
		}
	}

	again, err := LoadOrGenerate(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fp3, _ := again.Fingerprint(); fp3 != fp1 {
		t.Fatal("LoadOrGenerate regenerated existing material")
	}
	fresh, err := LoadOrGenerate(filepath.Join(t.TempDir(), "new"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if fp4, _ := fresh.Fingerprint(); fp4 == fp1 {
		t.Fatal("fresh material has the same fingerprint")
	}
}

func TestPinnedClientConfig(t *testing.T) {
	m, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, m)
	fp, _ := m.Fingerprint()
	otherFP, _ := other.Fingerprint()
	srv, _ := ParseCertPEM(m.ServerCertPEM)

	tests := []struct {
		name    string
		fp      string
		wantErr bool
	}{
		{"CA fingerprint", fp, false},
		{"CA fingerprint upper case with colons", colons(strings.ToUpper(fp)), false},
		{"leaf fingerprint", Fingerprint(srv), false},
		{"wrong fingerprint", otherFP, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := PinnedClientConfig(tt.fp)
			if err != nil {
				t.Fatal(err)
			}
			err = handshake(addr, cfg)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "pinned fingerprint") {
					t.Fatalf("handshake err = %v, want a fingerprint mismatch", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
		})
	}
	if _, err := PinnedClientConfig("abc"); err == nil {
		t.Fatal("short fingerprint accepted")
	}
}

// A keeper whose chain carries the pinned CA but whose leaf was signed by
// another key must be refused.
func TestPinnedRefusesForeignLeaf(t *testing.T) {
	m, _ := Generate(nil)
	other, _ := Generate(nil)
	forged := &Material{
		CACertPEM:     m.CACertPEM, // the pinned CA, appended to the chain
		ServerCertPEM: other.ServerCertPEM,
		ServerKeyPEM:  other.ServerKeyPEM,
	}
	addr := serve(t, forged)
	fp, _ := m.Fingerprint()
	cfg, _ := PinnedClientConfig(fp)
	if err := handshake(addr, cfg); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("handshake err = %v, want a verification failure", err)
	}
}

func TestCAFileClientConfig(t *testing.T) {
	m, _ := Generate(nil)
	other, _ := Generate(nil)
	addr := serve(t, m)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.crt")
	bad := filepath.Join(dir, "bad.crt")
	os.WriteFile(good, m.CACertPEM, 0o644)
	os.WriteFile(bad, other.CACertPEM, 0o644)

	cfg, err := CAFileClientConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	if err := handshake(net.JoinHostPort("localhost", port), cfg); err != nil {
		t.Fatalf("handshake with right CA: %v", err)
	}
	cfg, _ = CAFileClientConfig(bad)
	if err := handshake(addr, cfg); err == nil {
		t.Fatal("handshake with wrong CA succeeded")
	}
	fp, err := CAFileFingerprint(good)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := m.Fingerprint(); fp != want {
		t.Fatalf("CAFileFingerprint = %s, want %s", fp, want)
	}
	if _, err := CAFileClientConfig(filepath.Join(dir, "missing.crt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing CA file err = %v", err)
	}
}

func colons(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(s[i : i+2])
	}
	return b.String()
}

// TestI7NoCBCOrSHA1Suites is audit note I7: the keeper's listener offered
// the TLS 1.2 suites ECDHE-ECDSA-AES128/256-SHA (CBC, SHA-1 MAC). A client
// offering only those (or TLS 1.1) gets no handshake; TLS 1.2 with an AEAD
// suite and TLS 1.3 work.
func TestI7NoCBCOrSHA1Suites(t *testing.T) {
	m, err := Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, m)
	client := func(minV, maxV uint16, suites ...uint16) *tls.Config {
		return &tls.Config{InsecureSkipVerify: true, MinVersion: minV, MaxVersion: maxV, CipherSuites: suites} //nolint:gosec // the test looks at suites, not identity
	}
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		ok   bool
	}{
		{"ECDHE-ECDSA-AES128-SHA", client(tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA), false},
		{"ECDHE-ECDSA-AES256-SHA", client(tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA), false},
		{"ECDHE-ECDSA-AES128-SHA256", client(tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256), false},
		{"TLS 1.1", client(tls.VersionTLS10, tls.VersionTLS11), false},
		{"ECDHE-ECDSA-AES128-GCM-SHA256", client(tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256), true},
		{"ECDHE-ECDSA-CHACHA20-POLY1305", client(tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256), true},
		{"TLS 1.3", client(tls.VersionTLS13, tls.VersionTLS13), true},
	} {
		if err := handshake(addr, tc.cfg); (err == nil) != tc.ok {
			t.Errorf("%s: handshake err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	for _, id := range CipherSuites() {
		for _, bad := range tls.InsecureCipherSuites() {
			if id == bad.ID {
				t.Errorf("insecure suite %s allowed", bad.Name)
			}
		}
		if name := tls.CipherSuiteName(id); strings.Contains(name, "CBC") || strings.HasSuffix(name, "_SHA") {
			t.Errorf("suite %s allowed", name)
		}
	}
}
