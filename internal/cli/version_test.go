package cli_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/install"
	"github.com/soulstack/soulstack/internal/version"
)

// soulctl version shows its own build and the Keeper's, with the pin of
// the public key the Keeper really serves; /metrics carries the same
// version in soulstack_build_info.
func TestVersionClientAndKeeper(t *testing.T) {
	k := startKeeper(t)
	https := "https://" + strings.TrimPrefix(k.URL, "http://")
	r := ctl(t, nil, "", "--keeper", https, "--fingerprint", k.Fingerprint, "version", "-o", "json").must(t)
	var got struct {
		Client version.Info `json:"client"`
		Keeper struct {
			Version, Commit string
			TLSPin          string `json:"tls_pin"`
		} `json:"keeper"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	want := version.Get()
	if got.Client.Version != want.Version || got.Keeper.Version != want.Version || got.Keeper.Commit != want.Commit {
		t.Fatalf("versions = %+v, want client and keeper %s (%s)", got, want.Version, want.Commit)
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(https, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	served := install.PublicKeyPin(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{conn.ConnectionState().PeerCertificates[0].Raw}}}})
	conn.Close()
	if got.Keeper.TLSPin == "" || got.Keeper.TLSPin != served {
		t.Fatalf("keeper tls_pin = %q, the served certificate's is %q", got.Keeper.TLSPin, served)
	}

	table := ctl(t, nil, "", "--keeper", https, "--fingerprint", k.Fingerprint, "version").must(t).Stdout
	if !strings.Contains(table, "soulctl "+want.Version) || !strings.Contains(table, "keeper  "+want.Version) || !strings.Contains(table, served) {
		t.Fatalf("soulctl version:\n%s", table)
	}

	resp, err := http.Get(k.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `soulstack_build_info{commit="`+want.Commit+`"`) || !strings.Contains(string(b), `version="`+want.Version+`"} 1`) {
		t.Fatalf("/metrics has no soulstack_build_info of %s:\n%s", want.Version, grepLines(string(b), "build_info"))
	}
}

// Without a Keeper, soulctl version shows the client's and succeeds; with
// a Keeper that does not answer it shows the client's and fails.
func TestVersionWithoutKeeper(t *testing.T) {
	r := ctl(t, nil, "", "version").must(t)
	if strings.TrimSpace(r.Stdout) != "soulctl "+version.Get().String() {
		t.Fatalf("soulctl version = %q", r.Stdout)
	}
	if r := ctl(t, nil, "", "--version"); r.Code != 0 || !strings.Contains(r.Stdout, version.Version()) {
		t.Fatalf("soulctl --version: %+v", r)
	}
	r = ctl(t, nil, "", "--keeper", "http://127.0.0.1:1", "version")
	if r.Code != 1 || !strings.Contains(r.Stdout, "soulctl "+version.Version()) || !strings.Contains(r.Stderr, "unreachable") {
		t.Fatalf("unreachable keeper: %+v", r)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
