// Package tlsutil holds the Keeper's TLS material — a self-signed CA and a
// server certificate it signs — and the soul-side client configurations that
// pin that CA, either by the SHA-256 fingerprint carried in a join token or
// by a CA file.
package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File names of the material inside a directory (Save, Load).
const (
	CACertFile     = "ca.crt"
	CAKeyFile      = "ca.key"
	ServerCertFile = "server.crt"
	ServerKeyFile  = "server.key"
)

// Validity periods of generated certificates.
const (
	caValidity     = 20 * 365 * 24 * time.Hour
	serverValidity = 10 * 365 * 24 * time.Hour
)

// Material is a CA and the server certificate it signed, PEM encoded.
type Material struct {
	CACertPEM     []byte
	CAKeyPEM      []byte
	ServerCertPEM []byte
	ServerKeyPEM  []byte
}

// Generate creates a self-signed ECDSA P-256 CA and a server certificate
// signed by it. The server certificate's SANs are hosts (names or IP
// addresses) plus localhost, 127.0.0.1, ::1 and this machine's hostname.
func Generate(hosts []string) (*Material, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "Soul Stack Keeper CA", Organization: []string{"Soul Stack"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating server key: %w", err)
	}
	dns, ips := sans(hosts)
	srvTmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "Soul Stack Keeper", Organization: []string{"Soul Stack"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(serverValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating server certificate: %w", err)
	}

	caKeyPEM, err := keyPEM(caKey)
	if err != nil {
		return nil, err
	}
	srvKeyPEM, err := keyPEM(srvKey)
	if err != nil {
		return nil, err
	}
	return &Material{
		CACertPEM:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CAKeyPEM:      caKeyPEM,
		ServerCertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		ServerKeyPEM:  srvKeyPEM,
	}, nil
}

// sans splits hosts into DNS names and IP addresses and adds the loopback
// names and the hostname, without duplicates.
func sans(hosts []string) ([]string, []net.IP) {
	all := append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)
	if h, err := os.Hostname(); err == nil && h != "" {
		all = append(all, h)
	}
	var dns []string
	var ips []net.IP
	for _, h := range all {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		if !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(fmt.Sprintf("reading random serial: %v", err))
	}
	return n
}

func keyPEM(k crypto.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Save writes the material into dir (created 0700): certificates 0644, keys
// 0600.
func (m *Material) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating TLS directory: %w", err)
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{CACertFile, m.CACertPEM, 0o644},
		{CAKeyFile, m.CAKeyPEM, 0o600},
		{ServerCertFile, m.ServerCertPEM, 0o644},
		{ServerKeyFile, m.ServerKeyPEM, 0o600},
	}
	for _, f := range files {
		if len(f.data) == 0 {
			continue
		}
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Load reads material saved by Save. The CA key is optional (a keeper given
// an externally issued certificate has none).
func Load(dir string) (*Material, error) {
	var m Material
	for _, f := range []struct {
		name     string
		dst      *[]byte
		optional bool
	}{
		{CACertFile, &m.CACertPEM, false},
		{CAKeyFile, &m.CAKeyPEM, true},
		{ServerCertFile, &m.ServerCertPEM, false},
		{ServerKeyFile, &m.ServerKeyPEM, false},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			if f.optional && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("loading TLS material: %w", err)
		}
		*f.dst = b
	}
	if _, err := m.ServerTLSConfig(); err != nil {
		return nil, fmt.Errorf("loading TLS material from %s: %w", dir, err)
	}
	return &m, nil
}

// LoadOrGenerate loads the material in dir, or generates it for hosts and
// saves it there when dir holds none.
func LoadOrGenerate(dir string, hosts []string) (*Material, error) {
	m, err := Load(dir)
	if err == nil {
		return m, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if m, err = Generate(hosts); err != nil {
		return nil, err
	}
	if err := m.Save(dir); err != nil {
		return nil, err
	}
	return m, nil
}

// CACert parses the CA certificate.
func (m *Material) CACert() (*x509.Certificate, error) {
	return ParseCertPEM(m.CACertPEM)
}

// Fingerprint is the fingerprint of the CA certificate, the value souls pin.
func (m *Material) Fingerprint() (string, error) {
	c, err := m.CACert()
	if err != nil {
		return "", err
	}
	return Fingerprint(c), nil
}

// ServerTLSConfig is the keeper's listener configuration: the server
// certificate with the CA appended to the chain (so a soul pinning the CA
// by fingerprint finds it), HTTP/2 preferred, TLS 1.2 at least.
func (m *Material) ServerTLSConfig() (*tls.Config, error) {
	chain := append(append([]byte{}, m.ServerCertPEM...), '\n')
	chain = append(chain, m.CACertPEM...)
	cert, err := tls.X509KeyPair(chain, m.ServerKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading server key pair: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   tls.VersionTLS12,
		CipherSuites: CipherSuites(),
	}, nil
}

// CipherSuites are the TLS 1.2 suites the keeper and souls accept: ECDHE
// with AEAD only — no CBC, no SHA-1 MAC, no static RSA key exchange (audit
// note I7). TLS 1.3 suites are not configurable and all AEAD.
func CipherSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// Fingerprint is the lower-case hex SHA-256 of the certificate's DER.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// NormalizeFingerprint lower-cases fp and drops ':' separators and an
// optional "sha256:" prefix; it fails unless 32 bytes of hex remain.
func NormalizeFingerprint(fp string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(fp))
	s = strings.TrimPrefix(s, "sha256:")
	s = strings.ReplaceAll(s, ":", "")
	if b, err := hex.DecodeString(s); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("invalid certificate fingerprint %q: want 64 hex digits (SHA-256)", fp)
	}
	return s, nil
}

// ParseCertPEM parses the first certificate of a PEM block list.
func ParseCertPEM(b []byte) (*x509.Certificate, error) {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, errors.New("no PEM certificate found")
		}
		if blk.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parsing certificate: %w", err)
			}
			return c, nil
		}
	}
}

// DeriveKey derives a 32-byte key for purpose from the server's private
// key (HKDF-SHA256). Keepers sharing a database share their TLS material,
// so they derive the same keys, and the keys are never in the database.
func (m *Material) DeriveKey(purpose string) ([]byte, error) {
	if len(m.ServerKeyPEM) == 0 {
		return nil, errors.New("deriving a key: no server private key")
	}
	k, err := hkdf.Key(sha256.New, m.ServerKeyPEM, nil, "soulstack "+purpose, 32)
	if err != nil {
		return nil, fmt.Errorf("deriving the %s key: %w", purpose, err)
	}
	return k, nil
}
