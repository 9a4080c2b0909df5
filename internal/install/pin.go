// Package install is what puts a soul on a new host: the install.sh the
// Keeper serves (GET /install.sh), the soul binaries it serves (GET
// /v1/soul/binary), the Debian and RPM packages (nfpm) and `soulctl souls
// bootstrap` over SSH.
package install

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
)

// PublicKeyPin is curl's --pinnedpubkey value for the first certificate
// tc serves: "sha256//" and the base64 SHA-256 of its SubjectPublicKeyInfo.
// It is "" when tc has no parsable certificate.
func PublicKeyPin(tc *tls.Config) string {
	if tc == nil {
		return ""
	}
	var leaf *tls.Certificate
	switch {
	case len(tc.Certificates) > 0:
		leaf = &tc.Certificates[0]
	case tc.GetCertificate != nil:
		leaf, _ = tc.GetCertificate(&tls.ClientHelloInfo{})
	}
	if leaf == nil || len(leaf.Certificate) == 0 {
		return ""
	}
	c, err := x509.ParseCertificate(leaf.Certificate[0])
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256//" + base64.StdEncoding.EncodeToString(sum[:])
}
