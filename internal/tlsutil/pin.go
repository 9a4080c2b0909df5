package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ErrFingerprintMismatch is returned (wrapped) by the pinned verifier when
// no certificate the keeper presented has the pinned fingerprint.
var ErrFingerprintMismatch = errors.New("keeper certificate does not match the pinned fingerprint")

// PinnedClientConfig is a soul's TLS configuration that trusts exactly the
// certificate with the given fingerprint: the keeper's chain is accepted
// only if it contains that certificate and the leaf verifies against it (or
// is it). Host names are not checked — the pinned CA is the keeper's
// identity, whatever address the soul dials.
func PinnedClientConfig(fingerprint string) (*tls.Config, error) {
	fp, err := NormalizeFingerprint(fingerprint)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		// Chain verification is done by VerifyConnection against the pinned
		// certificate instead of the system roots.
		InsecureSkipVerify: true, //nolint:gosec // verified by verifyPinned
		VerifyConnection:   verifyPinned(fp),
		NextProtos:         []string{"h2"},
		MinVersion:         tls.VersionTLS12,
		CipherSuites:       CipherSuites(),
	}, nil
}

func verifyPinned(fp string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		certs := cs.PeerCertificates
		if len(certs) == 0 {
			return errors.New("keeper presented no certificate")
		}
		var anchor *x509.Certificate
		for _, c := range certs {
			if Fingerprint(c) == fp {
				anchor = c
				break
			}
		}
		if anchor == nil {
			return fmt.Errorf("%w %s (keeper CA is %s)", ErrFingerprintMismatch, fp, Fingerprint(certs[len(certs)-1]))
		}
		leaf := certs[0]
		if leaf == anchor {
			return nil
		}
		roots := x509.NewCertPool()
		roots.AddCert(anchor)
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			if c != anchor {
				inter.AddCert(c)
			}
		}
		if _, err := leaf.Verify(x509.VerifyOptions{
			Roots:         roots,
			Intermediates: inter,
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}); err != nil {
			return fmt.Errorf("keeper certificate does not verify against the pinned CA: %w", err)
		}
		return nil
	}
}

// CAFileClientConfig is a soul's TLS configuration that trusts the CA
// certificates in caFile (PEM) with standard verification, host name
// included.
func CAFileClientConfig(caFile string) (*tls.Config, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading keeper CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("reading keeper CA file %s: no PEM certificate in it", caFile)
	}
	return &tls.Config{
		RootCAs:      pool,
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
		CipherSuites: CipherSuites(),
	}, nil
}

// CAFileFingerprint is the fingerprint of the first certificate in caFile,
// the value a soul using a CA file signs into its handshake proof.
func CAFileFingerprint(caFile string) (string, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return "", fmt.Errorf("reading keeper CA file: %w", err)
	}
	c, err := ParseCertPEM(b)
	if err != nil {
		return "", fmt.Errorf("reading keeper CA file %s: %w", caFile, err)
	}
	return Fingerprint(c), nil
}
