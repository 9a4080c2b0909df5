package textutil

import "testing"

func TestSuggest(t *testing.T) {
	keys := []string{"onchanges", "onfail", "require", "register"}
	for _, tc := range []struct{ word, want string }{
		{"onchange", " (did you mean onchanges?)"},
		{"regster", " (did you mean register?)"},
		{"requires", " (did you mean require?)"},
		{"banana", ""},
	} {
		if got := Suggest(tc.word, keys); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	taskKeys := []string{"retry", "register", "require", "run_once"}
	for _, tc := range []struct{ word, want string }{
		{"retires", " (did you mean retry?)"},
		{"rexxxx", ""},
	} {
		if got := Suggest(tc.word, taskKeys); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance = %d, want 3", d)
	}
}
