package apiclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
)

func TestDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		`"90m"`:  90 * time.Minute,
		`"30d"`:  30 * 24 * time.Hour,
		`3600`:   time.Hour,
		`"1.5h"`: 90 * time.Minute,
	} {
		var d apitypes.Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("%s: %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{`"soon"`, `"d"`, `true`} {
		var d apitypes.Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
	b, _ := json.Marshal(apitypes.CreateJoinTokenRequest{TTL: apitypes.Duration(time.Hour)})
	if string(b) != `{"covens":null,"ttl":"1h0m0s"}` {
		t.Errorf("marshal: %s", b)
	}
}

func TestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/services":
			if r.Header.Get("Authorization") != "Bearer tok" {
				t.Errorf("authorization %q", r.Header.Get("Authorization"))
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"code":"invalid","message":"service x is invalid","details":[{"file":"a.yml","line":3,"message":"bad","text":"a.yml:3: bad"}]}}`))
		default:
			http.Error(w, "bad gateway", http.StatusBadGateway) // a proxy, not the keeper
		}
	}))
	defer srv.Close()
	c, err := apiclient.New(srv.URL+"/", "tok")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "x"})
	ae, ok := err.(*apiclient.APIError)
	if !ok || ae.Status != 400 || ae.Code != "invalid" || domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("error %#v", err)
	}
	if ps := ae.Problems(); len(ps) != 1 || ps[0].Line != 3 || ps[0].Text != "a.yml:3: bad" {
		t.Fatalf("problems %+v", ps)
	}
	_, err = c.ListSouls(ctx, apitypes.SoulQuery{})
	if !apiclient.IsCode(err, domain.CodeUnavailable) {
		t.Fatalf("proxy error %v", err)
	}
	srv.Close()
	if err := c.Health(ctx); domain.ErrorCode(err) != domain.CodeUnavailable {
		t.Fatalf("keeper down: %v", err)
	}
	if _, err := apiclient.New("keeper:8080", "t"); err == nil {
		t.Fatal("a URL without a scheme was accepted")
	}
	if _, err := apiclient.New("https://k:8080", "t", apiclient.WithFingerprint("zz")); err == nil {
		t.Fatal("a bad fingerprint was accepted")
	}
}
