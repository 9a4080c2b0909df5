package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// TestI4OverlongQueryIsRefused: audit I4 — past 10,000 parameters Go drops
// the whole query, which turned `?coven=c0&…&coven=c10000` (matching no
// soul) into "no filter" (every soul). Such a query is a 400 now; a query
// within the limit still filters.
func TestI4OverlongQueryIsRefused(t *testing.T) {
	e := newEnv(t)
	e.addSoul("h1", store.SoulConnected)
	var q strings.Builder
	for i := 0; i <= 10000; i++ {
		if i > 0 {
			q.WriteByte('&')
		}
		q.WriteString("coven=c" + strconv.Itoa(i))
	}
	st, b := e.do("GET", "/v1/souls?"+q.String(), e.tokens[auth.RoleViewer], "")
	e.wantError("GET", "/v1/souls", http.StatusBadRequest, "invalid", b, st)
	if strings.Contains(string(b), "h1") {
		t.Fatalf("the refused query listed souls: %s", b)
	}
	if st, b := e.do("GET", "/v1/souls?coven=c1&coven=c2", e.tokens[auth.RoleViewer], ""); st != http.StatusOK || strings.Contains(string(b), "h1") {
		t.Fatalf("a small coven filter: %d %s", st, b)
	}
	st, b = e.do("GET", "/v1/souls?coven=%zz", e.tokens[auth.RoleViewer], "")
	e.wantError("GET", "/v1/souls", http.StatusBadRequest, "invalid", b, st)
}
