package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ParseCron parses a schedule's cron expression: five fields (minute hour
// day-of-month month day-of-week) or a descriptor (@hourly, @daily,
// @every 10m, at least a minute), optionally after a time zone, "CRON_TZ=Europe/Paris 0 9 * * *"
// (TZ= is taken as CRON_TZ=). Without one, the keeper's local time zone
// applies. It never panics: robfig/cron panics on some specs ("TZ=UTC" with
// nothing after it), so the zone is checked here and a panic of the parser
// is turned into an error.
func ParseCron(expr string) (sched cron.Schedule, err error) {
	s := strings.TrimSpace(expr)
	if s == "" {
		return nil, fmt.Errorf("empty cron expression; want five fields (minute hour day-of-month month day-of-week) or a descriptor such as @hourly")
	}
	fields := strings.Fields(s)
	prefix := ""
	if zone, ok := cutZone(fields[0]); ok {
		if zone == "" {
			return nil, fmt.Errorf("%s names no time zone; write e.g. CRON_TZ=Europe/Paris 0 9 * * *", fields[0])
		}
		if _, err := time.LoadLocation(zone); err != nil {
			return nil, fmt.Errorf("unknown time zone %q (want an IANA name such as UTC or Europe/Paris)", zone)
		}
		fields = fields[1:]
		if len(fields) == 0 {
			return nil, fmt.Errorf("time zone %s without a schedule after it; write e.g. CRON_TZ=%s 0 9 * * *", zone, zone)
		}
		prefix = "CRON_TZ=" + zone + " "
	}
	if _, ok := cutZone(fields[0]); ok {
		return nil, fmt.Errorf("more than one time zone")
	}
	if fields[0] == "@every" {
		if len(fields) != 2 {
			return nil, fmt.Errorf("@every takes one duration, e.g. @every 10m")
		}
		d, err := time.ParseDuration(fields[1])
		if err != nil || d < time.Minute {
			return nil, fmt.Errorf("@every %s: want a duration of at least 1m", fields[1])
		}
	}
	if !strings.HasPrefix(fields[0], "@") && len(fields) != 5 {
		return nil, fmt.Errorf("%d fields; want five (minute hour day-of-month month day-of-week) or a descriptor such as @hourly", len(fields))
	}
	defer func() {
		if p := recover(); p != nil {
			sched, err = nil, fmt.Errorf("cannot be parsed (%v)", p)
		}
	}()
	return cron.ParseStandard(prefix + strings.Join(fields, " "))
}

// cutZone returns the zone of a TZ= or CRON_TZ= field.
func cutZone(field string) (string, bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if z, ok := strings.CutPrefix(field, p); ok {
			return z, true
		}
	}
	return "", false
}
