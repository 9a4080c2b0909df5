package expr

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAnsibleFunctions: the functions that carry Jinja's meaning give
// what Ansible gives (the values below are ansible-core 2.14's), are
// declared for the type checker, and fail where Ansible fails.
func TestAnsibleFunctions(t *testing.T) {
	env := ForKind(KindScenario)
	act := &Activation{Vars: map[string]any{"out": "Server version: Apache/2.4.57 (Debian)\n", "nested": []any{"a", []any{"b", "c"}, []any{[]any{"d"}}}}}
	cases := []struct {
		src  string
		want any
	}{
		// str.split(): runs of whitespace, no empty words.
		{`split(vars.out)`, []any{"Server", "version:", "Apache/2.4.57", "(Debian)"}},
		{`split(vars.out)[2].split("/")[1]`, "2.4.57"},
		{`split("  \t ")`, []any{}},
		// re.sub with \1 and \g<name>; a literal $ stays.
		{`regex_replace("git version 2.39.2", "^.*?([0-9\\.]+)$", "\\1")`, "2.39.2"},
		{`regex_replace("HAProxy version 2.6.12-1 2023/03/20", "^HAProxy version (?P<v>[0-9.]+).*$", "\\g<v>")`, "2.6.12"},
		{`regex_replace("a-b-c", "-", "$")`, "a$b$c"},
		{`regex_replace("abc", "x*", "-")`, "-a-b-c-"},
		// The int filter: Python's int(), then int(float()), else the default.
		{`int_or("8", 0)`, int64(8)},
		{`int_or(" +1_000 ", 0)`, int64(1000)},
		{`int_or("8.9", 0)`, int64(8)},
		{`int_or("-2.5e1", 0)`, int64(-25)},
		{`int_or("n/a", 0)`, int64(0)},
		{`int_or("nan", 7)`, int64(7)},
		{`int_or(null, 3)`, int64(3)},
		{`int_or(true, 0)`, int64(1)},
		{`int_or(-3.7, 0)`, int64(-3)},
		{`int_or([1], 5)`, int64(5)},
		// The version test (LooseVersion).
		{`version_compare("2.39.2", "2.26.0")`, int64(1)},
		{`version_compare("2.4", "2.4.0")`, int64(-1)},
		{`version_compare("1.10", "1.9")`, int64(1)},
		{`version_compare("1.0rc1", "1.0rc1")`, int64(0)},
		{`version_compare("1.0a", "1.0b")`, int64(-1)},
		// with_items flattens one level.
		{`flatten(vars.nested)`, []any{"a", "b", "c", []any{"d"}}},
		{`flatten([])`, []any{}},
	}
	for _, c := range cases {
		p, err := env.Compile(c.src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", c.src, err)
		}
		if _, err := env.TypeCheck(c.src, &TypeScope{}); err != nil {
			t.Errorf("TypeCheck(%s): %v", c.src, err)
		}
		got, err := p.Eval(context.Background(), act)
		if err != nil {
			t.Errorf("Eval(%s): %v", c.src, err)
			continue
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.src, d)
		}
	}
	for src, want := range map[string]string{
		`version_compare("1.0", "1.a")`:         "version comparison failed",
		`regex_replace("x", "(?<=a)b", "")`:     "does not compile",
		`int_or("inf", 0)`:                      "infinity",
		`int_or(vars.missing, 0)`:               "no such key",
		`regex_replace(vars.big, "", vars.big)`: "larger than the 1 MiB limit",
		`int_or("99999999999999999999", 0)`:     "64-bit",
	} {
		p, err := env.Compile(src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}
		a := &Activation{Vars: map[string]any{"big": strings.Repeat("x", 2000)}}
		_, err = p.Eval(context.Background(), a)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Eval(%s) = %v, want an error with %q", src, err, want)
		}
	}
	for _, bad := range []string{`split("a b") + 1`, `version_compare("1", "2") + "x"`, `int_or("1", 0) + "x"`} {
		if _, err := env.TypeCheck(bad, &TypeScope{}); err == nil {
			t.Errorf("TypeCheck(%s) accepted a type error", bad)
		}
	}
}
