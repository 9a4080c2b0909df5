package store

import (
	"testing"
	"time"
)

func TestPageLimit(t *testing.T) {
	for in, want := range map[int]int{-1: DefaultPageLimit, 0: DefaultPageLimit, 7: 7, MaxPageLimit: MaxPageLimit, MaxPageLimit + 1: MaxPageLimit, 1 << 30: MaxPageLimit} {
		if got := PageLimit(in); got != want {
			t.Errorf("PageLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestRunCursor(t *testing.T) {
	r := Run{ID: "01J~x", CreatedAt: time.Date(2031, 5, 17, 9, 30, 15, 123456000, time.UTC)}
	id, err := ParseRunCursor(RunCursor(r))
	if err != nil || id != r.ID {
		t.Fatalf("cursor round trip = %q %v", id, err)
	}
	// An older keeper's cursor (microseconds~apply_id) still reads.
	if id, err := ParseRunCursor("1700000000000000~01J~x"); err != nil || id != "01J~x" {
		t.Errorf("old cursor = %q %v", id, err)
	}
	for _, bad := range []string{"", "x", "12~", "~", "1.5~id"} {
		if _, err := ParseRunCursor(bad); err == nil {
			t.Errorf("ParseRunCursor(%q) accepted it", bad)
		}
	}
	if _, err := FactPath("os.family"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "os.", ".os", "os.fam ily", `os."x`} {
		if _, err := FactPath(bad); err == nil {
			t.Errorf("FactPath(%q) accepted it", bad)
		}
	}
}
