package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTaskIDRoundTrips(t *testing.T) {
	for _, ref := range []taskRef{
		{seq: 0, path: "0", wave: 1, sid: "web-1", attempt: 1},
		{seq: 7, path: "2.1.3", wave: 12, sid: "odd/sid", attempt: 40},
	} {
		id := ref.id("3f1c-run", testKey)
		got, err := parseTaskID("3f1c-run", id, testKey)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if diff := cmp.Diff(ref, got, cmp.AllowUnexported(taskRef{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id, diff)
		}
	}
	good := taskRef{seq: 4, path: "4", wave: 1, sid: "a", attempt: 1}.id("3f1c-run", testKey)
	for _, id := range []string{
		"other-run/0/0/1/a/1", // another run's
		"3f1c-run/0/0/1/a",    // no attempt
		"3f1c-run/x/0/1/a/1",  // seq
		"3f1c-run/0/0/w/a/1",  // wave
		"3f1c-run/0//1/a/1",   // path
		"3f1c-run/-1/0/1/a/1", // seq
		// L5: ids a soul makes up, or edits, are refused by their MAC.
		"3f1c-run/4/4/1/a/9/AAAAAAAAAAAAAAAAAAAAAA",
		strings.Replace(good, "/4/4/", "/42/zz/", 1),
		strings.Replace(good, "/1/a/1/", "/1/a/9/", 1),
		taskRef{seq: 4, path: "4", wave: 1, sid: "a", attempt: 1}.id("3f1c-run", []byte("another keeper's key")),
	} {
		if ref, err := parseTaskID("3f1c-run", id, testKey); err == nil {
			t.Errorf("%s parsed as %+v, want an error", id, ref)
		}
	}
}

var testKey = []byte("0123456789abcdef0123456789abcdef")
