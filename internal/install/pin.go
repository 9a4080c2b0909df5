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
	if tc == nil || len(tc.Certificates) == 0 || len(tc.Certificates[0].Certificate) == 0 {
		return ""
	}
	c, err := x509.ParseCertificate(tc.Certificates[0].Certificate[0])
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256//" + base64.StdEncoding.EncodeToString(sum[:])
}
