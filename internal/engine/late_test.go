package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTaskIDRoundTrips(t *testing.T) {
	for _, ref := range []taskRef{
		{seq: 0, path: "0", wave: 1, sid: "web-1", attempt: 1},
		{seq: 7, path: "2.1.3", wave: 12, sid: "odd/sid", attempt: 40},
	} {
		id := ref.id("3f1c-run")
		got, err := parseTaskID("3f1c-run", id)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if diff := cmp.Diff(ref, got, cmp.AllowUnexported(taskRef{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id, diff)
		}
	}
	for _, id := range []string{
		"other-run/0/0/1/a/1", // another run's
		"3f1c-run/0/0/1/a",    // no attempt
		"3f1c-run/x/0/1/a/1",  // seq
		"3f1c-run/0/0/w/a/1",  // wave
		"3f1c-run/0//1/a/1",   // path
		"3f1c-run/-1/0/1/a/1", // seq
	} {
		if ref, err := parseTaskID("3f1c-run", id); err == nil {
			t.Errorf("%s parsed as %+v, want an error", id, ref)
		}
	}
}
