package executor

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// core.file.copied ships only its source from files/, never other files
// of the scenario, and nothing for a src that escapes files/.
func TestCopiedFiles(t *testing.T) {
	files := map[string][]byte{"main.yml": []byte("tasks: []"), "files/a/b.bin": {0, 1}, "files/c": []byte("c"), "templates/t": nil}
	for _, tc := range []struct {
		src  any
		want map[string][]byte
	}{
		{"a/b.bin", map[string][]byte{"files/a/b.bin": {0, 1}}},
		{"./c", map[string][]byte{"files/c": []byte("c")}},
		{"../main.yml", nil},
		{"missing", nil},
		{42, nil},
	} {
		if got := CopiedFiles(files, map[string]any{"src": tc.src}); !cmp.Equal(got, tc.want) {
			t.Errorf("src %v: shipped %v, want %v", tc.src, got, tc.want)
		}
	}
}

// A directory src ships the files under it (and nothing beside it: "a"
// is not a prefix of "ab"); remote_src ships nothing.
func TestCopiedFilesTree(t *testing.T) {
	files := map[string][]byte{"files/a/b.bin": {0, 1}, "files/a/d/e": []byte("e"), "files/ab": []byte("x"), "main.yml": nil}
	tree := map[string][]byte{"files/a/b.bin": {0, 1}, "files/a/d/e": []byte("e")}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   map[string][]byte
	}{
		{"dir", map[string]any{"src": "a"}, tree},
		{"dir/", map[string]any{"src": "a/"}, tree},
		{"root", map[string]any{"src": "./"}, map[string][]byte{"files/a/b.bin": {0, 1}, "files/a/d/e": []byte("e"), "files/ab": []byte("x")}},
		{"remote_src", map[string]any{"src": "a", "remote_src": true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CopiedFiles(files, tc.params); !cmp.Equal(got, tc.want) {
				t.Errorf("shipped %v, want %v", got, tc.want)
			}
		})
	}
}
