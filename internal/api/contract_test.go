package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
)

// contract records every answer the test servers give (harness and
// others that wrap their handler with it); TestMain checks them all against
// openapi.json once the tests passed: a status the operation does not
// document, a field its schema does not declare or a required field
// missing fails the package (SPEC §14: documentation that drifts from the
// server fails the build).
var contract = &contractRecorder{}

type exchange struct {
	method, path, allow, ctype string
	status                     int
	body                       []byte
}

type contractRecorder struct {
	mu   sync.Mutex
	seen []exchange
}

type bodyRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (b *bodyRecorder) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
	b.ResponseWriter.WriteHeader(code)
}

func (b *bodyRecorder) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	if b.body.Len() < 4<<20 {
		b.body.Write(p)
	}
	return b.ResponseWriter.Write(p)
}

func (b *bodyRecorder) Flush() {
	if f, ok := b.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (b *bodyRecorder) Unwrap() http.ResponseWriter { return b.ResponseWriter }

func (c *contractRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		br := &bodyRecorder{ResponseWriter: w}
		h.ServeHTTP(br, r)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.seen = append(c.seen, exchange{method: r.Method, path: r.URL.Path, status: br.status, allow: w.Header().Get("Allow"),
			ctype: w.Header().Get("Content-Type"), body: br.body.Bytes()})
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if problems, checked := contract.check("openapi.json"); len(problems) > 0 {
			fmt.Fprintf(os.Stderr, "openapi.json contract: %d of %d answers do not match:\n  %s\n", len(problems), checked, strings.Join(problems, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

type apiDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Responses map[string]json.RawMessage `json:"responses"`
		Schemas   map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	Responses map[string]json.RawMessage `json:"responses"`
}

type response struct {
	Ref     string `json:"$ref"`
	Content map[string]struct {
		Schema json.RawMessage `json:"schema"`
	} `json:"content"`
}

type schema struct {
	Ref                  string                     `json:"$ref"`
	Type                 string                     `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	Required             []string                   `json:"required"`
	Items                json.RawMessage            `json:"items"`
	AllOf, OneOf, AnyOf  []json.RawMessage
}

func (c *contractRecorder) check(file string) (problems []string, checked int) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return []string{err.Error()}, 0
	}
	var doc apiDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return []string{err.Error()}, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, ex := range c.seen {
		tmpl := matchPath(doc.Paths, ex.path)
		if tmpl == "" {
			continue // not an API path (404s of unknown paths, /ui …)
		}
		checked++
		ops := doc.Paths[tmpl]
		method := strings.ToLower(ex.method)
		if method == "head" {
			method = "get"
		}
		opRaw, ok := ops[method]
		var p string
		if !ok {
			if want := allowOf(ops); ex.status != http.StatusMethodNotAllowed || ex.allow != want {
				p = fmt.Sprintf("%s %s: %d Allow %q; the path documents no %s, want 405 Allow %q", ex.method, ex.path, ex.status, ex.allow, ex.method, want)
			}
		} else {
			p = checkAnswer(&doc, opRaw, ex)
		}
		if p != "" && !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	sort.Strings(problems)
	return problems, checked
}

func checkAnswer(doc *apiDoc, opRaw json.RawMessage, ex exchange) string {
	var op operation
	if err := json.Unmarshal(opRaw, &op); err != nil {
		return err.Error()
	}
	respRaw, ok := op.Responses[fmt.Sprint(ex.status)]
	if !ok {
		respRaw, ok = op.Responses["default"]
	}
	if !ok {
		return fmt.Sprintf("%s %s: status %d is not documented (body %.200s)", ex.method, ex.path, ex.status, ex.body)
	}
	var resp response
	_ = json.Unmarshal(respRaw, &resp)
	if resp.Ref != "" {
		_ = json.Unmarshal(doc.Components.Responses[strings.TrimPrefix(resp.Ref, "#/components/responses/")], &resp)
	}
	media, ok := resp.Content["application/json"]
	if !ok || len(media.Schema) == 0 || !strings.HasPrefix(ex.ctype, "application/json") || ex.method == http.MethodHead {
		return ""
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(ex.body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Sprintf("%s %s: %d body is not JSON: %v", ex.method, ex.path, ex.status, err)
	}
	if p := validate(doc, media.Schema, v, "body", 0); p != "" {
		return fmt.Sprintf("%s %s: %d: %s", ex.method, ex.path, ex.status, p)
	}
	return ""
}

// validate checks v's fields against s: every field of an object with
// declared properties must be declared (unless additionalProperties allows
// more), every required one present; arrays element by element.
func validate(doc *apiDoc, raw json.RawMessage, v any, at string, depth int) string {
	if depth > 32 || len(raw) == 0 {
		return ""
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return ""
	}
	if s.Ref != "" {
		return validate(doc, doc.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")], v, at, depth+1)
	}
	if len(s.AllOf)+len(s.OneOf)+len(s.AnyOf) > 0 {
		return "" // composed schemas are not checked field by field
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				return fmt.Sprintf("%s: required field %q missing", at, r)
			}
		}
		if len(s.Properties) == 0 {
			return ""
		}
		extra := len(s.AdditionalProperties) > 0 && string(s.AdditionalProperties) != "false"
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := s.Properties[k]
			if !ok {
				if extra {
					continue
				}
				return fmt.Sprintf("%s: field %q is not documented", at, k)
			}
			if p := validate(doc, ps, x[k], at+"."+k, depth+1); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := validate(doc, s.Items, e, fmt.Sprintf("%s[%d]", at, i), depth+1); p != "" {
				return p
			}
		}
	}
	return ""
}

// matchPath is the documented path template ex.path falls under (the one
// with the fewest wildcards), or "".
func matchPath(paths map[string]map[string]json.RawMessage, path string) string {
	segs := strings.Split(path, "/")
	best, bestWild := "", 1<<30
	for tmpl := range paths {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		wild, ok := 0, true
		for i, t := range ts {
			switch {
			case strings.HasPrefix(t, "{") && segs[i] != "":
				wild++
			case t != segs[i]:
				ok = false
			}
		}
		if ok && wild < bestWild {
			best, bestWild = tmpl, wild
		}
	}
	return best
}

// allowOf is the Allow header the server sends for a path with these
// operations.
func allowOf(ops map[string]json.RawMessage) string {
	var out []string
	for _, m := range []string{"get", "head", "post", "put", "patch", "delete"} {
		_, ok := ops[m]
		if m == "head" {
			_, ok = ops["get"]
		}
		if ok {
			out = append(out, strings.ToUpper(m))
		}
	}
	return strings.Join(out, ", ")
}

// TestContractCheckerCatches: the contract check is not vacuous — an
// undocumented status, an undocumented field, a missing required field, a
// missing Allow and a nested undocumented field are each reported; a
// documented answer is not.
func TestContractCheckerCatches(t *testing.T) {
	c := &contractRecorder{seen: []exchange{
		{method: "GET", path: "/v1/schedules", status: 418, ctype: "application/json", body: []byte(`[]`)},
		{method: "GET", path: "/v1/schedules", status: 401, ctype: "application/json", body: []byte(`{"error": {"code": "unauthorized", "message": "m"}, "surprise": 1}`)},
		{method: "GET", path: "/v1/schedules", status: 200, ctype: "application/json", body: []byte(`[{"id": "x"}]`)},
		{method: "PUT", path: "/v1/schedules", status: 404, ctype: "application/json", body: []byte(`{}`)},
		{method: "GET", path: "/v1/souls/h1", status: 404, ctype: "application/json", body: []byte(`{"error": {"code": "not_found", "message": "m", "extra": true}}`)},
		{method: "GET", path: "/v1/souls/h1", status: 404, ctype: "application/json", body: []byte(`{"error": {"code": "not_found", "message": "m"}}`)},
	}}
	problems, checked := c.check("openapi.json")
	if checked != 6 || len(problems) != 5 {
		t.Fatalf("checked %d, problems %d, want 6 and 5:\n%s", checked, len(problems), strings.Join(problems, "\n"))
	}
	for _, want := range []string{"status 418 is not documented", `field "surprise" is not documented`, `required field "procedure" missing`, "want 405", `field "extra" is not documented`} {
		if !strings.Contains(strings.Join(problems, "\n"), want) {
			t.Errorf("no problem says %q:\n%s", want, strings.Join(problems, "\n"))
		}
	}
}
