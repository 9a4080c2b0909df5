package editorschema

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ModelinePrefix starts the comment by which the YAML language server
// (redhat.vscode-yaml, and the editors built on it) picks a file's schema.
const ModelinePrefix = "# yaml-language-server: $schema="

// LocalDir is where `soulctl scenario schema` writes the schemas inside a
// service repository, so the modelines work offline and match the soulctl
// that wrote them.
const LocalDir = ".soulstack/schemas"

// SetModeline returns data with a modeline naming url as its first line:
// an existing modeline among the leading comment lines is replaced, else
// one is added on top.
func SetModeline(data []byte, url string) []byte {
	line := ModelinePrefix + url
	rest := data
	var head [][]byte
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		cur := rest
		if i >= 0 {
			cur = rest[:i]
		}
		t := bytes.TrimSpace(cur)
		if len(t) > 0 && t[0] != '#' {
			break
		}
		if bytes.HasPrefix(t, []byte(ModelinePrefix)) {
			out := append(bytes.Join(head, nil), line...)
			if i >= 0 {
				out = append(out, rest[i:]...)
			}
			return out
		}
		if i < 0 {
			break
		}
		head = append(head, rest[:i+1])
		rest = rest[i+1:]
	}
	return append([]byte(line+"\n"), data...)
}

// Change is one file whose modeline was written.
type Change struct {
	// File is the path relative to the repository.
	File string
	// Schema is the schema file it names.
	Schema string
	// URL is what the modeline points at.
	URL string
}

// WriteModelines sets the modeline of every file of the service repository
// at dir that has a schema (SchemaFor). With baseURL "" the schemas are
// written into dir/.soulstack/schemas and the modelines are relative paths
// to them; otherwise the modelines name baseURL + the schema file. Files
// already carrying the right modeline are left alone and not reported.
func WriteModelines(dir, baseURL string) ([]Change, error) {
	if st, err := os.Stat(filepath.Join(dir, "service.yml")); err != nil || st.IsDir() {
		return nil, fmt.Errorf("%s is not a service repository: it has no service.yml", dir)
	}
	if baseURL == "" {
		if err := Write(filepath.Join(dir, filepath.FromSlash(LocalDir))); err != nil {
			return nil, err
		}
	}
	var out []Change
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel != "." && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil // symlinks are not followed: they may point out of the repository
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		schema := SchemaFor(rel, data)
		if schema == "" {
			return nil
		}
		url := baseURL + schema
		if baseURL == "" {
			url, _ = filepath.Rel(filepath.Dir(filepath.FromSlash(rel)), filepath.FromSlash(path.Join(LocalDir, schema)))
			url = filepath.ToSlash(url)
		}
		next := SetModeline(data, url)
		if bytes.Equal(next, data) {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, next, info.Mode().Perm()); err != nil {
			return err
		}
		out = append(out, Change{File: rel, Schema: schema, URL: url})
		return nil
	})
	return out, err
}

// Lookup returns the document of kind ("scenario") or file name
// ("scenario.schema.json").
func Lookup(name string) (Doc, error) {
	docs, err := Documents()
	if err != nil {
		return Doc{}, err
	}
	var kinds []string
	for _, d := range docs {
		if d.Kind == name || d.File == name {
			return d, nil
		}
		kinds = append(kinds, d.Kind)
	}
	return Doc{}, fmt.Errorf("no schema %q: one of %s", name, strings.Join(kinds, ", "))
}
