package ui_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestI4OverlongQueryIsRefusedInTheUI: audit I4 in the web UI — past
// 10,000 parameters Go drops the whole query, which turned the souls
// page's ?coven=c0&…&coven=c10000 (matching no soul) into "no filter"
// (every soul). Such a page is a 400 now, as in the API; a query within
// the limit still filters.
func TestI4OverlongQueryIsRefusedInTheUI(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	var q strings.Builder
	for i := 0; i <= 10000; i++ {
		if i > 0 {
			q.WriteByte('&')
		}
		q.WriteString("coven=c" + strconv.Itoa(i))
	}
	status, body := e.get(c, "/ui/souls?"+q.String())
	if status != http.StatusBadRequest || strings.Contains(body, `href="/ui/souls/web-1.example"`) {
		t.Fatalf("over-long query: status %d, want 400 listing no soul\n%s", status, body)
	}
	if status, _ := e.get(c, "/ui/souls?coven=%zz"); status != http.StatusBadRequest {
		t.Fatalf("bad escape: status %d, want 400", status)
	}
	lacks(t, "souls?coven=c1", e.page(c, "/ui/souls?coven=c1"), `href="/ui/souls/web-1.example"`)
}
