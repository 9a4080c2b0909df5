package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// KeyFingerprint names a soul's Ed25519 public key where people compare
// keys: the soul's log while it waits as pending, `soulctl souls show`,
// `souls accept --key` and the audit log. It is "sha256:" and the first 16
// bytes of the key's SHA-256 in hex.
func KeyFingerprint(pub []byte) string {
	sum := sha256.Sum256(pub)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// SameKeyFingerprint reports whether fp (as typed: case and a missing
// "sha256:" prefix do not matter) names pub.
func SameKeyFingerprint(fp string, pub []byte) bool {
	fp = strings.ToLower(strings.TrimSpace(fp))
	if !strings.HasPrefix(fp, "sha256:") {
		fp = "sha256:" + fp
	}
	return fp == KeyFingerprint(pub)
}
