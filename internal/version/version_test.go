package version

import "testing"

func TestCompatible(t *testing.T) {
	for _, tc := range []struct {
		keeper, soul string
		ok           bool
	}{
		{"v1.4.2", "v1.4.2", true},
		{"v1.4.2", "v1.2.0", true},
		{"v1.4.2", "v1.4.9", true},
		{"v1.4.2", "v1.4.2-3-gabcdef0-dirty", true},
		{"v1.4.2", "v1.5.0", false},
		{"v1.4.2", "v2.0.0", false},
		{"v2.0.0", "v1.9.0", false},
		{"v0.3.1", "v0.3.0", true},
		{"v0.3.1", "v0.2.9", false},
		{"v0.3.1", "v0.4.0", false},
		{"v1.4.2", "", true},
		{"v1.4.2", "dev", true},
		{"v1.4.2", "v0.0.0-untagged-abc", true},
		{"v0.0.0-untagged-abc-dirty", "v9.0.0", true},
	} {
		ok, reason := Compatible(tc.keeper, tc.soul)
		if ok != tc.ok {
			t.Errorf("Compatible(%q, %q) = %v (%s), want %v", tc.keeper, tc.soul, ok, reason, tc.ok)
		}
		if !ok && reason == "" {
			t.Errorf("Compatible(%q, %q): refusal without a reason", tc.keeper, tc.soul)
		}
	}
}

func TestParse(t *testing.T) {
	for v, want := range map[string]Semver{"v1.2.3": {1, 2, 3}, "v10.0.7-2-g1234567": {10, 0, 7}, "v0.1.0-dirty": {0, 1, 0}} {
		got, ok := Parse(v)
		if !ok || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "1.2.3", "v1.2", "vx.2.3", Untagged + "-abc", "dev"} {
		if _, ok := Parse(v); ok {
			t.Errorf("Parse(%q) accepted", v)
		}
	}
}

func TestGetWithoutLdflags(t *testing.T) {
	i := Get()
	if i.Version == "" || i.Commit == "" || i.Platform == "" {
		t.Fatalf("Get() = %+v: empty fields", i)
	}
	if _, ok := Parse(i.Version); ok {
		t.Fatalf("a test binary (no -ldflags) claims release version %q", i.Version)
	}
}
