package soulstackv1

// ProofPayload is what a soul signs with its Ed25519 key to answer a
// Challenge: nonce || sid || keeper fingerprint (lower-case hex SHA-256 of
// the keeper CA certificate the soul pinned). Binding the fingerprint means a
// proof made for one keeper cannot be relayed to another.
func ProofPayload(nonce []byte, sid, fingerprint string) []byte {
	b := make([]byte, 0, len(nonce)+len(sid)+1+len(fingerprint))
	b = append(b, nonce...)
	b = append(b, sid...)
	b = append(b, 0)
	b = append(b, fingerprint...)
	return b
}
