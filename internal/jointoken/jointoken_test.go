package jointoken

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	fpRaw := sha256.Sum256([]byte("ca"))
	fp := hex.EncodeToString(fpRaw[:])
	tok := Encode(secret, strings.ToUpper(fp))
	if !strings.HasPrefix(tok, "SSJ1.") {
		t.Fatalf("token %q lacks prefix", tok)
	}
	gotSecret, gotFP, err := Decode(" " + tok + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotSecret, secret) || gotFP != fp {
		t.Fatalf("Decode = %x, %s; want %x, %s", gotSecret, gotFP, secret, fp)
	}
	if h := Hash(secret); len(h) != 32 || bytes.Equal(h, secret) {
		t.Fatalf("Hash = %x", h)
	}
	if !bytes.Equal(Hash(secret), Hash(gotSecret)) {
		t.Fatal("Hash not deterministic")
	}
}

func TestDecodeMalformed(t *testing.T) {
	fp := strings.Repeat("ab", 32)
	sec := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for _, s := range []string{
		"",
		"SSJ1",
		"SSJ2." + sec + "." + fp,
		"SSJ1." + sec,
		"SSJ1.!!!." + fp,
		"SSJ1.AAAA." + fp,
		"SSJ1." + sec + ".xyz",
		"SSJ1." + sec + "." + fp[:62],
		"SSJ1." + sec + "." + fp + ".extra",
	} {
		if _, _, err := Decode(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%q) err = %v, want ErrMalformed", s, err)
		}
	}
}
