package netguard

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// serveOn starts an HTTP server on the given loopback address.
func serveOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func metadata(t *testing.T) *httptest.Server {
	return serveOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"AccessKeyId":"AKIAFAKEKEEPERHOST","SecretAccessKey":"keeper-host-cloud-secret"}`)
	}))
}

func get(t *testing.T, p *Policy, url string) (string, error) {
	t.Helper()
	resp, err := p.Client().Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), nil
}

// TestM2DefaultRefusesLoopbackMetadata is audit finding M2: the default
// policy keeps the Keeper from fetching a loopback "metadata" service,
// whether named by address or by a host name resolving to it.
func TestM2DefaultRefusesLoopbackMetadata(t *testing.T) {
	srv := metadata(t)
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, url := range []string{srv.URL + "/latest/meta-data/iam.json", "http://localhost:" + port + "/latest/meta-data/iam.json"} {
		body, err := get(t, p, url)
		if err == nil || !strings.Contains(err.Error(), "http.allow") || strings.Contains(body, "AKIA") {
			t.Errorf("GET %s: body %q err %v, want refused", url, body, err)
		}
	}
}

// TestM2RedirectToRefusedAddress is M2 through a redirect: an allowed
// server answering 302 to the metadata address does not get the client
// there.
func TestM2RedirectToRefusedAddress(t *testing.T) {
	meta := metadata(t)
	front := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, meta.URL+"/latest/meta-data/iam.json", http.StatusFound)
	}))
	p, err := New([]string{"127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := get(t, p, front.URL+"/")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(body, "AKIA") {
		t.Fatalf("redirect: body %q err %v, want refused at 127.0.0.1", body, err)
	}
	// The allowed address itself is reachable.
	ok := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "fine") }))
	if body, err := get(t, p, ok.URL); err != nil || body != "fine" {
		t.Fatalf("allowed 127.0.0.2: %q %v", body, err)
	}
}

// TestM2AllowByNameAndCIDR: an admin opens a private range or a name
// explicitly; catch-alls never open the refused ranges.
func TestM2AllowByNameAndCIDR(t *testing.T) {
	srv := metadata(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, tc := range []struct {
		allow []string
		url   string
		ok    bool
	}{
		{[]string{"127.0.0.0/8"}, srv.URL, true},
		{[]string{"localhost"}, "http://localhost:" + port, true},
		{[]string{"localhost"}, srv.URL, false}, // the name opens the name, not the address
		{[]string{"0.0.0.0/0", "::/0", "public"}, srv.URL, false},
		{[]string{"10.0.0.0/8"}, srv.URL, false},
	} {
		p, err := New(tc.allow)
		if err != nil {
			t.Fatal(err)
		}
		_, err = get(t, p, tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("allow %v GET %s: err %v, want ok=%v", tc.allow, tc.url, err, tc.ok)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	def, _ := New(nil)
	def.localAddrs = func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("203.0.114.9")}, nil }
	only, _ := New([]string{"198.100.0.0/16", "*.corp.example"})
	only.localAddrs = def.localAddrs
	for _, tc := range []struct {
		p    *Policy
		addr string
		ok   bool
	}{
		{def, "169.254.169.254", false},
		{def, "::ffff:169.254.169.254", false},
		{def, "fe80::1", false},
		{def, "::1", false},
		{def, "10.1.2.3", false},
		{def, "172.20.0.1", false},
		{def, "192.168.1.1", false},
		{def, "100.64.0.1", false},
		{def, "fd00::1", false},
		{def, "0.0.0.0", false},
		{def, "203.0.114.9", false}, // the Keeper's own address
		{def, "93.184.216.34", true},
		{def, "2606:2800:220:1::1", true},
		{only, "93.184.216.34", false},
		{only, "198.100.3.4", true},
	} {
		err := tc.p.CheckAddr(netip.MustParseAddr(tc.addr), false)
		if (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%s) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
	if !only.hostAllowed("api.corp.example") || only.hostAllowed("corp.example") || only.hostAllowed("evilcorp.example") {
		t.Error("wildcard domain matching")
	}
}

func TestNewRejectsBadEntries(t *testing.T) {
	_, err := New([]string{"10.0.0.0/33", "", "bad host!", "*.ok.example"})
	if err == nil || !strings.Contains(err.Error(), "http.allow[0]") || !strings.Contains(err.Error(), "http.allow[1]") || !strings.Contains(err.Error(), "http.allow[2]") || strings.Contains(err.Error(), "http.allow[3]") {
		t.Fatalf("err = %v", err)
	}
}
