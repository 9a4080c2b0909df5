package dsl

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/soulstack/soulstack/internal/stateschema"
)

// The package's own tests load service.yml files with state_schema, as the
// keeper does (stateschema/dslhook, which imports dsl, cannot be used here).
func init() { RegisterSchemaCompiler(stateschema.Compile) }

// TestStateSchemaWithoutCompilerFailsClosed: a program built without the
// compiler refuses a state_schema rather than skipping its check.
func TestStateSchemaWithoutCompilerFailsClosed(t *testing.T) {
	saved := schemaCompiler
	schemaCompiler = nil
	defer func() { schemaCompiler = saved }()
	fsys := fstest.MapFS{"service.yml": {Data: []byte("name: x\nstate_schema:\n  type: object\n")}}
	_, ps := LoadFS(fsys)
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "cannot be checked") || ps[0].Pos.Line != 3 {
		t.Fatalf("problems = %v, want one at service.yml:3 saying the schema cannot be checked", ps)
	}
}

func TestIsProbeIgnoresSpaces(t *testing.T) {
	for cw, want := range map[string]bool{"false": true, " false ": true, "false\n": true, "true": false, "": false, "register.self.rc == 0": false} {
		if got := (&Task{ChangedWhen: cw}).IsProbe(); got != want {
			t.Errorf("IsProbe(changed_when %q) = %v, want %v", cw, got, want)
		}
	}
}
