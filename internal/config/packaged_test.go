package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// yamlKeys lists the dotted YAML keys of struct type t (a Duration, Size or
// other non-struct field is a leaf; a slice of structs contributes its
// element's keys under the slice's key).
func yamlKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := prefix + name
		keys = append(keys, key)
		ft := f.Type
		if ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]() && ft.NumField() > 1 {
			keys = append(keys, yamlKeys(ft, key+".")...)
		}
	}
	return keys
}

// TestPackagedConfigShowsEveryOption: packaging/keeper.yaml names every key
// the Keeper's configuration accepts — set, or shown in a comment (the
// Checker binding example) — so an option added without documenting it in
// the packaged file fails here. (TestConfigValidate in keepercmd checks the
// file is valid.)
func TestPackagedConfigShowsEveryOption(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "packaging", "keeper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	keys := yamlKeys(reflect.TypeFor[Keeper](), "")
	if len(keys) < 30 {
		t.Fatalf("only %d keys found by reflection: %v", len(keys), keys)
	}
	for _, k := range keys {
		leaf := k[strings.LastIndex(k, ".")+1:]
		re := regexp.MustCompile(`(?m)^[ \t]*#?[ \t]*(- )?` + regexp.QuoteMeta(leaf) + `:`)
		if !re.Match(b) {
			t.Errorf("packaging/keeper.yaml does not show %s", k)
		}
	}
}
