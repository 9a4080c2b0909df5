package core

import "testing"

// TestCheckCronScheduleOdd: odd schedules are errors, never a panic of the
// cron library (which panics on a zone followed by a tab).
func TestCheckCronScheduleOdd(t *testing.T) {
	for _, s := range []string{"TZ=UTC\t0\t*\t*\t*", "CRON_TZ=UTC 0 * * *", "TZ=UTC", "* * * *", "@every 5m", "61 * * * *"} {
		if err := checkCronSchedule(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	for _, s := range []string{"*/5 * * * *", "@reboot", "@daily", "0 3 * * 1-5"} {
		if err := checkCronSchedule(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}
