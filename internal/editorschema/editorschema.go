// Package editorschema publishes the JSON Schemas editors use to complete
// and check a service repository's files and Checker procedures as people
// type (docs/schemas/, `soulctl scenario schema`). The schemas are built by
// internal/dsl and internal/checker from the key lists, patterns and
// module params schemas their validators use, so they cannot drift.
package editorschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/dsl"
	_ "github.com/soulstack/soulstack/internal/module/core" // the modules whose params are described
)

//go:generate go run ./gen ../../docs/schemas

// BaseURL is where docs/schemas is published: the $id prefix of every
// document, and what `soulctl scenario schema --url` is usually given.
const BaseURL = "https://raw.githubusercontent.com/soulstack/soulstack/main/docs/schemas/"

// Dir is docs/schemas relative to the repository root.
const Dir = "docs/schemas"

// Doc is one schema document.
type Doc struct {
	// File is its name under docs/schemas/ ("scenario.schema.json").
	File string
	// Kind is the short name soulctl scenario schema --print takes
	// ("scenario").
	Kind  string
	Title string
	// Globs are the repository paths it applies to.
	Globs []string
	JSON  []byte
}

// Documents returns every schema, sorted by file name, as indented JSON.
func Documents() ([]Doc, error) {
	var out []Doc
	for _, s := range dsl.EditorSchemas(BaseURL) {
		b, err := encode(s.Schema)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		out = append(out, Doc{File: s.File, Kind: kindOf(s.File), Title: s.Title, Globs: s.Globs, JSON: b})
	}
	b, err := encode(checker.ProcedureSchema(BaseURL + checker.ProcedureSchemaFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", checker.ProcedureSchemaFile, err)
	}
	out = append(out, Doc{File: checker.ProcedureSchemaFile, Kind: kindOf(checker.ProcedureSchemaFile),
		Title: "Soul Stack Checker procedure", Globs: []string{"procedures/*.yaml", "procedures/*.yml"}, JSON: b})
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, nil
}

func kindOf(file string) string { return strings.TrimSuffix(file, ".schema.json") }

// encode writes v as indented JSON with a final newline; map keys are
// sorted, so the output is stable.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write writes every document into dir and removes *.schema.json files
// there that are no longer generated.
func Write(dir string) error {
	docs, err := Documents()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, d := range docs {
		keep[d.File] = true
		if err := os.WriteFile(filepath.Join(dir, d.File), d.JSON, 0o644); err != nil {
			return err
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	for _, f := range old {
		if !keep[filepath.Base(f)] {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// SchemaFor names the schema of the repository file at rel (a slash path
// relative to the service repository), or "" when none applies. data is
// the file's content: a neighbour file of a scenario or destiny is a task
// list (include:) only when its top level is a list.
func SchemaFor(rel string, data []byte) string {
	parts := strings.Split(rel, "/")
	ext := filepath.Ext(rel)
	if ext != ".yml" && ext != ".yaml" {
		return ""
	}
	switch {
	case rel == "service.yml":
		return dsl.SchemaService
	case len(parts) == 2 && parts[0] == "essence":
		return dsl.SchemaEssence
	case len(parts) == 2 && parts[0] == "health":
		return dsl.SchemaHealth
	case len(parts) == 2 && parts[0] == "rules":
		return dsl.SchemaRule
	case len(parts) == 3 && (parts[0] == "scenario" || parts[0] == "destiny"):
		switch {
		case parts[2] == "main.yml" && parts[0] == "scenario":
			return dsl.SchemaScenario
		case parts[2] == "main.yml":
			return dsl.SchemaDestiny
		case parts[2] == "vars.yml":
			return ""
		case topLevelList(data):
			return dsl.SchemaTasks
		}
	}
	return ""
}

// topLevelList reports whether YAML data starts a block or flow sequence
// at its top level (comments and the document marker aside).
func topLevelList(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || t == "---" {
			continue
		}
		return strings.HasPrefix(line, "- ") || line == "-" || strings.HasPrefix(line, "[")
	}
	return false
}
