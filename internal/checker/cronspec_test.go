package checker

import (
	"strings"
	"testing"
	"time"
)

// oddCronSpecs are specs robfig/cron panics on or that look valid and are
// not; each must be an error naming the problem, never a panic.
var oddCronSpecs = map[string]string{
	"TZ=UTC":                        "without a schedule",
	"CRON_TZ=UTC":                   "without a schedule",
	"TZ=":                           "names no time zone",
	"CRON_TZ= 0 * * * *":            "names no time zone",
	"TZ=Mars/Olympus 0 * * * *":     "unknown time zone",
	"TZ=../../etc/passwd * * * * *": "unknown time zone",
	"TZ=UTC TZ=UTC 0 * * * *":       "more than one time zone",
	"":                              "empty",
	"   ":                           "empty",
	"* * * *":                       "4 fields",
	"* * * * * *":                   "6 fields",
	"60 * * * *":                    "above maximum",
	"*/0 * * * *":                   "step",
	"5- * * * *":                    "",
	"@bogus":                        "unrecognized descriptor",
	"@every":                        "one duration",
	"@every 1s":                     "at least 1m",
	"@every 5 m":                    "one duration",
	"@every -1s":                    "at least 1m",
	"every five minutes":            "3 fields",
}

// TestParseCronOddSpecs: odd specs are errors with a clear message, valid
// ones with a zone are schedules in that zone; nothing panics.
func TestParseCronOddSpecs(t *testing.T) {
	for spec, want := range oddCronSpecs {
		_, err := ParseCron(spec)
		switch {
		case want == "":
			if err == nil {
				t.Errorf("%q: accepted", spec)
			}
		case err == nil || !strings.Contains(err.Error(), want):
			t.Errorf("%q: %v, want an error containing %q", spec, err, want)
		}
	}
	for spec, want := range map[string]time.Time{
		"CRON_TZ=Asia/Tokyo 0 9 * * *": time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC), // 09:00 JST
		"TZ=UTC\t0\t9\t*\t*\t*":        time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC), // tabs, not spaces
		"@every 90m":                   time.Date(2025, 3, 1, 2, 30, 0, 0, time.UTC),
		"  */5 * * * *  ":              time.Date(2025, 3, 1, 1, 5, 0, 0, time.UTC),
		"@hourly":                      time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC),
	} {
		s, err := ParseCron(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		if got := s.Next(time.Date(2025, 3, 1, 1, 0, 0, 0, time.UTC)); !got.Equal(want) {
			t.Errorf("%q: next after 01:00 UTC is %v, want %v", spec, got, want)
		}
	}
}

// FuzzParseCron: no input makes the parser panic.
func FuzzParseCron(f *testing.F) {
	for spec := range oddCronSpecs {
		f.Add(spec)
	}
	f.Add("CRON_TZ=Europe/Paris 0 9 * * 1-5")
	f.Fuzz(func(t *testing.T, spec string) {
		_, _ = ParseCron(spec)
	})
}
