package jinja

import (
	"testing"
	"testing/fstest"
)

// TestMapEntriesFollowMapKeys (issue 37): items(), keys(), values(), the
// items filter and dict2items list a map's entries in Options.MapKeys'
// order (the YAML's, as Python's dicts keep insertion order); without it,
// sorted — never Go's random map order.
func TestMapEntriesFollowMapKeys(t *testing.T) {
	const tmpl = "{% for k, v in m.items() %}{{ k }}={{ v }} {% endfor %}|{{ m.keys() | join(',') }}|{{ m.values() | join(',') }}|" +
		"{% for k, v in m | items %}{{ k }} {% endfor %}|{% for e in m | dict2items %}{{ e.key }} {% endfor %}"
	fsys := fstest.MapFS{"t.j2": {Data: []byte(tmpl)}}
	data := map[string]any{"m": map[string]any{"zoe": 1, "Ann": 2, "mia": 3, "bob": 4}}
	yaml := []string{"zoe", "Ann", "mia", "bob"}
	for name, tc := range map[string]struct {
		keys func(map[string]any) []string
		want string
	}{
		"yaml order": {func(m map[string]any) []string {
			if len(m) == 4 {
				return yaml
			}
			return sortedKeys(m)
		}, "zoe=1 Ann=2 mia=3 bob=4 |zoe,Ann,mia,bob|1,2,3,4|zoe Ann mia bob |zoe Ann mia bob "},
		"sorted": {nil, "Ann=2 bob=4 mia=3 zoe=1 |Ann,bob,mia,zoe|2,4,3,1|Ann bob mia zoe |Ann bob mia zoe "},
	} {
		o := Default()
		o.MapKeys = tc.keys
		for range 5 { // Go's map order would show within a few renders
			out, err := Render(fsys, "t.j2", data, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if string(out) != tc.want {
				t.Fatalf("%s:\n got %q\nwant %q", name, out, tc.want)
			}
		}
	}
}
