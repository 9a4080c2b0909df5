package sqlstore

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// TextTimeLayout is how dialects without a timestamp type store times: UTC
// with a fixed number of fractional digits, so text order is time order.
const TextTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// normTime is the form every stored time takes: UTC, whole microseconds
// (PostgreSQL's precision).
func normTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// ts encodes t as a query argument.
func (s *Store) ts(t time.Time) any { return s.d.Time(normTime(t)) }

// tsPtr encodes an optional time; nil is SQL NULL.
func (s *Store) tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.ts(*t)
}

// orNow returns t, or the current time when t is zero.
func (s *Store) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t
}

// timeCol scans a NOT NULL timestamp column.
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(src any) error {
	t, err := parseTime(src)
	if err != nil {
		return err
	}
	if t != nil {
		*c.t = *t
	}
	return nil
}

// nullTimeCol scans a nullable timestamp column into a *time.Time.
type nullTimeCol struct{ t **time.Time }

func (c nullTimeCol) Scan(src any) error {
	t, err := parseTime(src)
	if err != nil {
		return err
	}
	*c.t = t
	return nil
}

func parseTime(src any) (*time.Time, error) {
	var t time.Time
	switch v := src.(type) {
	case nil:
		return nil, nil
	case time.Time:
		t = v
	case string:
		p, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, fmt.Errorf("parsing stored time %q: %w", v, err)
		}
		t = p
	case []byte:
		return parseTime(string(v))
	default:
		return nil, fmt.Errorf("unexpected time column type %T", src)
	}
	t = t.UTC()
	return &t, nil
}

// optMap encodes an optional JSON object: nil is SQL NULL.
func optMap(m map[string]any) (any, error) {
	if m == nil {
		return nil, nil
	}
	return reqMap(m)
}

// reqMap encodes a JSON object that is always present: nil is {}.
func reqMap(m map[string]any) (string, error) {
	if m == nil {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", invalid("encoding JSON: %v", err)
	}
	return string(b), nil
}

// strList encodes a string list as a JSON array (never null).
func strList(l []string) string {
	if l == nil {
		l = []string{}
	}
	b, _ := json.Marshal(l) // a []string always marshals
	return string(b)
}

// mapCol scans a JSON object column. With required set, NULL scans as an
// empty map rather than nil.
type mapCol struct {
	m        *map[string]any
	required bool
}

func (c mapCol) Scan(src any) error {
	b, err := jsonBytes(src)
	if err != nil {
		return err
	}
	*c.m = nil
	if b != nil {
		if err := json.Unmarshal(b, c.m); err != nil {
			return fmt.Errorf("decoding stored JSON: %w", err)
		}
	}
	if *c.m == nil && c.required {
		*c.m = map[string]any{}
	}
	return nil
}

// strMapCol scans a JSON object of strings (nil when empty).
type strMapCol struct{ m *map[string]string }

func (c strMapCol) Scan(src any) error {
	b, err := jsonBytes(src)
	if err != nil {
		return err
	}
	*c.m = nil
	if b != nil {
		if err := json.Unmarshal(b, c.m); err != nil {
			return fmt.Errorf("decoding stored JSON: %w", err)
		}
	}
	if len(*c.m) == 0 {
		*c.m = nil
	}
	return nil
}

// strMap encodes a map of strings as a JSON object (never null).
func strMap(m map[string]string) string {
	if m == nil {
		m = map[string]string{}
	}
	b, _ := json.Marshal(m) // a map[string]string always marshals
	return string(b)
}

// listCol scans a JSON string array column; the result is never nil.
type listCol struct{ l *[]string }

func (c listCol) Scan(src any) error {
	b, err := jsonBytes(src)
	if err != nil {
		return err
	}
	*c.l = nil
	if b != nil {
		if err := json.Unmarshal(b, c.l); err != nil {
			return fmt.Errorf("decoding stored JSON: %w", err)
		}
	}
	if *c.l == nil {
		*c.l = []string{}
	}
	return nil
}

func jsonBytes(src any) ([]byte, error) {
	switch v := src.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	default:
		return nil, fmt.Errorf("unexpected JSON column type %T", src)
	}
}

// sortedSet sorts and de-duplicates names (covens, SIDs) and drops empty
// ones; the result is never nil.
func sortedSet(names []string) []string {
	out := make([]string, 0, len(names))
	for _, c := range names {
		if c != "" {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
