package checker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompare(t *testing.T) {
	tests := []struct {
		op        Op
		got, want any
		held      bool
		err       string
	}{
		{OpEq, 1.0, 1.0, true, ""},
		{OpEq, "1", 1.0, false, ""}, // different JSON types are unequal
		{OpEq, true, "true", false, ""},
		{OpEq, nil, nil, true, ""},
		{OpEq, []any{"a"}, []any{"a"}, true, ""},
		{OpNe, nil, 1.0, true, ""},
		{OpNe, map[string]any{"a": 1.0}, map[string]any{"a": 1.0}, false, ""},
		{OpGt, 2.0, 1.0, true, ""},
		{OpGe, 1.0, 1.0, true, ""},
		{OpLt, 1.0, 1.0, false, ""},
		{OpLe, 1.0, 1.0, true, ""},
		{OpGt, "b", "a", false, "op > needs two numbers, got string > string"},
		{OpLt, nil, 1.0, false, "op < needs two numbers, got null < number"},
		{OpIn, "a", []any{"a", "b"}, true, ""},
		{OpIn, 1.0, []any{"1"}, false, ""},
		{OpIn, "ell", "hello", true, ""},
		{OpIn, "a", map[string]any{"a": 1.0}, false, "op in needs an array"},
		{OpContains, []any{1.0, 2.0}, 2.0, true, ""},
		{OpContains, "hello", "lo", true, ""},
		{OpContains, 5.0, 5.0, false, "op contains needs an array"},
	}
	for _, tt := range tests {
		held, err := compare(tt.op, tt.got, tt.want)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v %s %v: err %v, want %q", tt.got, tt.op, tt.want, err, tt.err)
			}
			continue
		}
		if err != nil || held != tt.held {
			t.Errorf("%v %s %v = %v, %v; want %v", tt.got, tt.op, tt.want, held, err, tt.held)
		}
	}
}

func TestFilters(t *testing.T) {
	nodes := `[[{"uuid":"n1","status":"DOWN"},{"uuid":"n2","status":"UP"},{"uuid":"n3","status":"DOWN"}], {"system_drain_node=yes":{"nodes":["n3"]}}]`
	noLabels := `[[{"uuid":"n1","status":"DOWN"}], {}]`
	tests := []struct {
		expr, data, want string
	}{
		// The seed's expressions, with the legacy `DOWN` literal.
		{"difference([0][?status==`DOWN`].uuid, [1].\"system_drain_node=yes\".nodes || `[]`)", nodes, `["n1"]`},
		{"length(difference([0][?status==`DOWN`].uuid, [1].\"system_drain_node=yes\".nodes || `[]`))", noLabels, `1`},
		{"metrics.libvirt_domain_info_vmstate[].value[] | [-1]", `{"metrics":{"libvirt_domain_info_vmstate":[{"value":[17,5]}]}}`, `5`},
		{"length([?task_status != `SUCCESS`])", `[{"task_status":"SUCCESS"},{"task_status":"FAILURE"}]`, `1`},
		{"intersection(a, b)", `{"a":[1,2,2,3],"b":[3,2]}`, `[2,3]`},
		{"union(a, b)", `{"a":[1,2,2],"b":[3,2]}`, `[1,2,3]`},
		{"difference(a, b)", `{"a":[{"x":1},{"x":2}],"b":[{"x":2}]}`, `[{"x":1}]`},
		{"`\"quoted\"`", `{}`, `"quoted"`},
		{"`[1, 2]`", `{}`, `[1,2]`},
		{"'raw `x`'", `{}`, "\"raw `x`\""},
		{"missing.path", `{}`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			f, err := CompileFilter(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			var data, want any
			if err := json.Unmarshal([]byte(tt.data), &data); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			got, err := f.Search(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := CompileFilter("difference(@)"); err != nil {
		t.Errorf("arity is checked at run time, compile should pass: %v", err)
	}
	f, _ := CompileFilter("difference(a, b)")
	if _, err := f.Search(map[string]any{"a": []any{}, "b": nil}); err == nil {
		t.Error("difference with null should fail (the seed guards it with || `[]`)")
	}
}
