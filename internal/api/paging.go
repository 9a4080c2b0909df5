package api

import (
	"net/http"
	"net/url"
	"slices"
)

// Paging of list routes (issue 23): a list answers at most ?limit= items
// (each route has a bounded default; at most maxPage) starting after the
// cursor ?after=; when more follow, the X-Next-Cursor header carries the
// cursor of the next page and a Link header (rel="next") its URL. The
// answer's body stays a JSON array.

// maxPage bounds ?limit= on every list route.
const maxPage = 10000

// smallPage is the default page of the lists that stay short (archons,
// tokens, procedures, schedules, services, incarnations are read whole
// and cut here).
const smallPage = 1000

// NextCursorHeader names the header that carries the next page's cursor.
const NextCursorHeader = "X-Next-Cursor"

// pageParams reads ?after= and ?limit= (def when absent).
func pageParams(r *http.Request, def int) (string, int, error) {
	limit, err := limitParam(r, def)
	if err != nil {
		return "", 0, err
	}
	return r.URL.Query().Get("after"), limit, nil
}

// setNext announces the next page, starting after cursor ("" = none).
func setNext(w http.ResponseWriter, r *http.Request, cursor string) {
	if cursor == "" {
		return
	}
	q := r.URL.Query()
	q.Set("after", cursor)
	next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	w.Header().Set(NextCursorHeader, cursor)
	w.Header().Set("Link", "<"+next.String()+`>; rel="next"`)
}

// pageSlice cuts a page out of items (already read whole, in list order):
// the limit items after the one whose key is ?after=. An unknown cursor is
// invalid: the item it named is gone.
func pageSlice[T any](w http.ResponseWriter, r *http.Request, items []T, def int, key func(T) string) ([]T, error) {
	after, limit, err := pageParams(r, def)
	if err != nil {
		return nil, err
	}
	if after != "" {
		i := slices.IndexFunc(items, func(x T) bool { return key(x) == after })
		if i < 0 {
			return nil, invalidf("after=%q names no item of this list (gone meanwhile?): start again without it", after)
		}
		items = items[i+1:]
	}
	return trimPage(w, r, items, limit, key), nil
}

// trimPage keeps the first limit items and, when there were more,
// announces the next page after the last one kept.
func trimPage[T any](w http.ResponseWriter, r *http.Request, items []T, limit int, key func(T) string) []T {
	if len(items) > limit {
		items = items[:limit]
		setNext(w, r, key(items[limit-1]))
	}
	return nonNil(items)
}
