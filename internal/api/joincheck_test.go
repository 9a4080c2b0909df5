package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// The join check refuses, before install.sh touches a host, a soul the
// gateway would refuse: one whose SID is bound to another key (audit:
// install.sh reported "installed and started" for such a host), or
// rejected. A pending record under another key gives way to a token, as in
// the gateway. Without a token it answers for a soul that will be pending.
func TestJoinCheckSID(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	jt, err := e.client(auth.RoleAdmin).CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"web"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	e.addSoul("web-1", store.SoulConnected, "web")
	e.addSoul("web-2", store.SoulPending)
	e.addSoul("web-3", store.SoulRejected)
	own := base64.StdEncoding.EncodeToString([]byte("key-web-1"))
	for _, tc := range []struct {
		token, sid, key string
		status          int
		say             string
	}{
		{jt.Token, "web-1", "", http.StatusConflict, "already bound to another key"},
		{jt.Token, "web-1", base64.StdEncoding.EncodeToString([]byte("other")), http.StatusConflict, "already bound to another key"},
		{"", "web-1", "", http.StatusConflict, "already bound to another key"},
		{jt.Token, "web-1", own, http.StatusOK, ""}, // a reinstall keeping its key
		{jt.Token, "web-2", "", http.StatusOK, ""},  // a token takes a pending SID
		{"", "web-2", "", http.StatusConflict, "already bound to another key"},
		{jt.Token, "web-3", "", http.StatusConflict, "rejected"},
		{jt.Token, "new-host", "", http.StatusOK, ""},
		{"", "new-host", "", http.StatusOK, `"pending":true`},
	} {
		body := fmt.Sprintf(`{"token":%q,"sid":%q,"public_key":%q}`, tc.token, tc.sid, tc.key)
		st, b := e.do("POST", "/v1/soul/join-check", "", body)
		if st != tc.status || !strings.Contains(string(b), tc.say) {
			t.Errorf("join check of %s (token %v, key %q): %d %s, want %d saying %q", tc.sid, tc.token != "", tc.key, st, b, tc.status, tc.say)
		}
	}
}
