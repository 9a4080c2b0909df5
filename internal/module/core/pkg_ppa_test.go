package core

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPPATranslation resolves ppa:owner/name as apt_repository does, with a
// loopback server standing in for Launchpad's API and the keyserver.
func TestPPATranslation(t *testing.T) {
	const fp = "0123456789ABCDEF0123456789ABCDEF01234567"
	const key = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZtest\n-----END PGP PUBLIC KEY BLOCK-----"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/~deadsnakes/+archive/ubuntu/ppa":
			_, _ = w.Write([]byte(`{"signing_key_fingerprint": "` + strings.ToLower(fp) + `"}`))
		case r.URL.Path == "/pks/lookup" && r.URL.Query().Get("search") == "0x"+fp && r.URL.Query().Get("op") == "get":
			_, _ = w.Write([]byte(key + "\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	src, err := resolvePPA(t.Context(), "ppa:deadsnakes/ppa", "jammy", srv.URL+"/api", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if src.uri != "https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu" || src.suite != "jammy" || src.component != "main" || src.key != key {
		t.Errorf("resolved %+v", src)
	}
	file, err := aptManager{}.repoFile(repoSpec{name: "deadsnakes", uris: []string{src.uri}, suites: []string{src.suite}, components: []string{src.component}, signedBy: src.key, enabled: true})
	if err != nil || !strings.Contains(string(file), "URIs: https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu\nSuites: jammy\nComponents: main\n") {
		t.Errorf("deb822 file: %v\n%s", err, file)
	}
	for _, c := range []struct{ ppa, codename, want string }{
		{"deadsnakes/ppa", "jammy", "want ppa:owner/name"},
		{"ppa:deadsnakes/ppa", "", "codename"},
		{"ppa:nobody/ppa", "jammy", "Launchpad"},
	} {
		if _, err := resolvePPA(t.Context(), c.ppa, c.codename, srv.URL+"/api", srv.URL); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s/%s: %v, want %q", c.ppa, c.codename, err, c.want)
		}
	}
}
