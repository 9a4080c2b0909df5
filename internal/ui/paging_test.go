package ui_test

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"testing"

	"github.com/soulstack/soulstack/internal/store"
)

var soulRowRE = regexp.MustCompile(`<td><a href="/ui/souls/([^"]+)">`)
var nextRE = regexp.MustCompile(`<a href="([^"]+)" id="next-page">`)

// The souls list shows a page at a time, filtered by SID prefix, and
// pages through the matching souls by SID.
func TestSoulsPaged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i := range 250 {
		status := store.SoulConnected
		if i%5 == 0 {
			status = store.SoulDisconnected
		}
		if err := e.st.UpsertSoul(ctx, store.Soul{SID: fmt.Sprintf("host-%04d", i), Status: status,
			Covens: []string{"fleet"}, PublicKey: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	c := e.session()
	page := e.page(c, "/ui/souls?sid=host-")
	var seen []string
	for n := 1; ; n++ {
		rows := soulRowRE.FindAllStringSubmatch(page, -1)
		want := 100
		if n == 3 {
			want = 50
		}
		if len(rows) != want {
			t.Fatalf("page %d: %d souls, want %d", n, len(rows), want)
		}
		contains(t, fmt.Sprintf("page %d", n), page, fmt.Sprintf("%d–%d of 250", (n-1)*100+1, (n-1)*100+want))
		for _, r := range rows {
			seen = append(seen, r[1])
		}
		m := nextRE.FindStringSubmatch(page)
		if m == nil {
			break
		}
		if n == 3 {
			t.Fatal("the last page links a next page")
		}
		page = e.page(c, html.UnescapeString(m[1]))
	}
	if len(seen) != 250 || seen[0] != "host-0000" || seen[100] != "host-0100" || seen[249] != "host-0249" {
		t.Errorf("paged through %d souls: first %s, 101st %s, last %s", len(seen), seen[0], seen[100], seen[len(seen)-1])
	}
	// Filters combine with paging: 50 disconnected hosts fit one page.
	page = e.page(c, "/ui/souls?sid=host-&status=disconnected&coven=fleet")
	if rows := soulRowRE.FindAllStringSubmatch(page, -1); len(rows) != 50 || rows[1][1] != "host-0005" {
		t.Errorf("disconnected hosts: %d rows", len(rows))
	}
	lacks(t, "filtered page", page, `id="next-page"`)
	contains(t, "filtered page", page, "1–50 of 50")
}
