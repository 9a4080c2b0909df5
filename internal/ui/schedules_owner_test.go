package ui_test

import (
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/store"
)

// TestM4SchedulesShowOwnerAndPause: audit M4 — the schedules page names
// each schedule's owner and shows the schedules of a disabled owner
// paused, with the reason.
func TestM4SchedulesShowOwnerAndPause(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	for _, a := range []store.Archon{
		{ID: "olga-id", Name: "olga", Role: store.RoleOperator, CreatedAt: e.now},
		{ID: "oleg-id", Name: "oleg", Role: store.RoleOperator, CreatedAt: e.now},
	} {
		if err := e.st.CreateArchon(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for id, owner := range map[string]string{"sched-olga": "olga-id", "sched-oleg": "oleg-id"} {
		if err := e.st.CreateSchedule(ctx, store.Schedule{ID: id, Procedure: "fence_node",
			Vars: map[string]any{"node": "db-1.example"}, Cron: "@hourly", OwnerID: owner}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.st.DisableArchon(ctx, "olga-id", e.now); err != nil {
		t.Fatal(err)
	}
	page := e.page(e.session(), "/ui/schedules")
	rows := map[string]string{}
	for _, row := range strings.Split(page, "<tr>") {
		for _, name := range []string{"olga", "oleg"} {
			if strings.Contains(row, "<td>"+name+"</td>") {
				rows[name] = row
			}
		}
	}
	if r := rows["olga"]; !strings.Contains(r, ">paused</span>") || !strings.Contains(r, "archon olga, is disabled") {
		t.Errorf("olga's schedule row is not shown paused:\n%s", r)
	}
	if r := rows["oleg"]; !strings.Contains(r, "<td class=\"schedule-state\">active</td>") {
		t.Errorf("oleg's schedule row is not active:\n%s", r)
	}
}
