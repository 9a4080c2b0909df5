package ui

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/store"
)

func TestBuildGrid(t *testing.T) {
	results := []store.HostResult{
		{Seq: 2, Path: "2", TaskName: "restart", SID: "b", Wave: 2, Status: "failed", DurationMS: 900},
		{Seq: 1, Path: "1", TaskName: "probe", SID: "a", Wave: 1, Status: "ok", DurationMS: 5},
		{Seq: 1, Path: "1", TaskName: "probe", SID: "b", Wave: 1, Status: "ok", DurationMS: 7},
		{Seq: 2, Path: "2", TaskName: "restart", SID: "a", Wave: 1, Status: "changed", DurationMS: 300},
		{Seq: 3, Path: "2.1", SID: "a", Wave: 1, Status: "weird"},
	}
	type cellSum struct{ SID, Status string }
	summary := func(g grid) (hosts []string, rows [][]cellSum) {
		for _, r := range g.Rows {
			var cs []cellSum
			for _, c := range r.Cells {
				cs = append(cs, cellSum{c.SID, c.Status})
			}
			rows = append(rows, cs)
		}
		return g.Hosts, rows
	}

	t.Run("finished", func(t *testing.T) {
		g := buildGrid(results, []string{"a", "b", "c"}, false)
		hosts, rows := summary(g)
		if diff := cmp.Diff([]string{"a", "b"}, hosts); diff != "" {
			t.Errorf("hosts of a finished run are the ones that reported (-want +got):\n%s", diff)
		}
		want := [][]cellSum{
			{{"a", "ok"}, {"b", "ok"}},
			{{"a", "changed"}, {"b", "failed"}},
			{{"a", "weird"}, {"b", "none"}},
		}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("cells (-want +got):\n%s", diff)
		}
		if g.Rows[1].Status != "failed" || g.Rows[0].Status != "ok" || g.Rows[2].Status != "weird" {
			t.Errorf("row statuses %q %q %q", g.Rows[0].Status, g.Rows[1].Status, g.Rows[2].Status)
		}
		if diff := cmp.Diff([]int{1, 2}, g.Rows[1].Waves); diff != "" {
			t.Errorf("waves of the rolling task (-want +got):\n%s", diff)
		}
		if g.Rows[1].Duration != 900 || g.Rows[2].Task != "task 2.1" || g.Rows[2].Depth != 1 {
			t.Errorf("row 2: %+v; row 3: %+v", g.Rows[1], g.Rows[2])
		}
		wantCounts := []statusCount{{"failed", 1}, {"changed", 1}, {"ok", 2}, {"weird", 1}}
		if diff := cmp.Diff(wantCounts, g.Counts); diff != "" {
			t.Errorf("counts, worst first (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"b"}, g.Failed); diff != "" {
			t.Errorf("failed hosts (-want +got):\n%s", diff)
		}
	})

	t.Run("live", func(t *testing.T) {
		g := buildGrid(results[:1], []string{"a", "b", "c"}, true)
		hosts, rows := summary(g)
		if diff := cmp.Diff([]string{"a", "b", "c"}, hosts); diff != "" {
			t.Errorf("a live run shows every member (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([][]cellSum{{{"a", "pending"}, {"b", "failed"}, {"c", "pending"}}}, rows); diff != "" {
			t.Errorf("cells (-want +got):\n%s", diff)
		}
		if g.Rows[0].Cells[0].ID == g.Rows[0].Cells[2].ID {
			t.Error("cell ids collide")
		}
	})
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "/ui/",
		"/ui":                  "/ui",
		"/ui/runs/x?y=1":       "/ui/runs/x?y=1",
		"/ui/../v1/souls":      "/ui/",
		"/ui/souls/../runs/":   "/ui/",
		"/ui/..%2F..%2Fv1":     "/ui/",
		"/ui/souls/a%2Fb":      "/ui/souls/a%2Fb",
		"http://evil/ui/":      "/ui/",
		"//evil/ui/":           "/ui/",
		"/ui/\r\nSet-Cookie:x": "/ui/",
		"/v1/archons":          "/ui/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStatusClass(t *testing.T) {
	for in, want := range map[string]string{
		"error_locked":          "st-error_locked",
		"FAILURE":               "st-failure",
		`x" onmouseover="alert`: "st-xonmouseoveralert",
		"":                      "st-unknown",
	} {
		if got := statusClass(in); got != want {
			t.Errorf("statusClass(%q) = %q, want %q", in, got, want)
		}
	}
}
