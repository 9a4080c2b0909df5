package relay

import (
	"bytes"
	"strings"
	"testing"
)

// TestI6SealRoundTrip: a sealed relay payload opens only with the same
// key and for the same use, and shows nothing of its content.
func TestI6SealRoundTrip(t *testing.T) {
	s, err := newSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newSealer(bytes.Repeat([]byte{8}, 32))
	plain := []byte(`{"stdout":"pw=Hunter2-S3cr3t!"}`)
	sealed, err := s.seal(plain, adResult)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("Hunter2")) {
		t.Fatal("sealed payload shows the secret")
	}
	if got, err := s.open(sealed, adResult); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open = %q, %v", got, err)
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	for name, try := range map[string]func() ([]byte, error){
		"another key":     func() ([]byte, error) { return other.open(sealed, adResult) },
		"another use":     func() ([]byte, error) { return s.open(sealed, adWork) },
		"tampered":        func() ([]byte, error) { return s.open(tampered, adResult) },
		"plain (old row)": func() ([]byte, error) { return s.open(plain, adResult) },
	} {
		if _, err := try(); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if _, err := newSealer([]byte("short")); err == nil || !strings.Contains(err.Error(), "32") {
		t.Errorf("short key: %v", err)
	}
}
