package sqlstore

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func TestRebind(t *testing.T) {
	s := New(nil, nil, Dialect{Numbered: true})
	tests := []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`UPDATE t SET a = ?, b = ? WHERE c = ?`, `UPDATE t SET a = $1, b = $2 WHERE c = $3`},
		{`SELECT '?' || ?, "q?" FROM t WHERE x = ?`, `SELECT '?' || $1, "q?" FROM t WHERE x = $2`},
		{`SELECT 'it''s ?' WHERE a IN (?, ?)`, `SELECT 'it''s ?' WHERE a IN ($1, $2)`},
	}
	for _, tc := range tests {
		if got := s.rebind(tc.in); got != tc.want {
			t.Errorf("rebind(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := s.rebind(tc.in); got != tc.want { // cached
			t.Errorf("cached rebind(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	plain := New(nil, nil, Dialect{})
	if got := plain.rebind(`a = ?`); got != `a = ?` {
		t.Errorf("? dialect rebind changed the query: %q", got)
	}
}

func TestLoadMigrations(t *testing.T) {
	ms, err := LoadMigrations(fstest.MapFS{
		"0002_more.sql": {Data: []byte("B")},
		"0001_init.sql": {Data: []byte("A")},
		"README.md":     {Data: []byte("ignored")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 1 || ms[0].SQL != "A" || ms[1].Name != "0002_more.sql" {
		t.Fatalf("LoadMigrations = %+v", ms)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"bad name":  {"init.sql": {Data: []byte("A")}},
		"version 0": {"0000_init.sql": {Data: []byte("A")}},
		"duplicate": {"0001_a.sql": {Data: []byte("A")}, "01_b.sql": {Data: []byte("B")}},
	} {
		if _, err := LoadMigrations(fsys); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestTextTimeOrder(t *testing.T) {
	// Text timestamps must sort as times do, across zones and precisions.
	times := []time.Time{
		time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2030, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(2030, 1, 1, 2, 0, 0, 0, time.FixedZone("+3", 3*3600)), // 23:00 the day before in UTC
		time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC),
	}
	enc := func(t time.Time) string { return normTime(t).Format(TextTimeLayout) }
	for i := range times {
		for j := range times {
			if got, want := strings.Compare(enc(times[i]), enc(times[j])), times[i].Compare(times[j]); got != want {
				t.Errorf("order of %v and %v: text %d, time %d", times[i], times[j], got, want)
			}
		}
	}
	p, err := parseTime(enc(times[2]))
	if err != nil || !p.Equal(times[2]) || p.Location() != time.UTC {
		t.Fatalf("round trip: %v, %v", p, err)
	}
}
