// Package custom runs the typed modules of a service repository (SPEC §9
// "Custom modules"): modules/<name>/module.yml declares the module (params
// and output with types, check mode, timeout, output bound) and
// modules/<name>/run is its program, in any language. The program gets a
// JSON request on stdin ({params, check, diff}) and prints a JSON result on
// stdout ({changed, failed, msg, diff, output}).
//
// The Keeper parses module.yml at load time (package dsl validates tasks
// calling service.<name> against the schema), pins the program by SHA-256
// and ships spec and program with every call; the soul parses the spec
// again, checks the pin and runs the program under the declared bounds.
package custom

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/textutil"
)

// Prefix is what every custom module's name starts with in tasks.
const Prefix = "service."

// Bounds of a custom module. The defaults apply when module.yml says
// nothing; a module may declare less or more, up to the maxima.
const (
	DefaultTimeout   = 60 * time.Second
	MaxTimeout       = time.Hour
	DefaultMaxOutput = 1 << 20
	MaxMaxOutput     = 16 << 20
	// maxSpecSize bounds module.yml.
	maxSpecSize = 64 << 10
)

// NameRE is what a custom module's directory name looks like.
var NameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// Spec is a parsed module.yml.
type Spec struct {
	// Name is the full name, "service.<dir>".
	Name   string
	Schema module.Schema
	// Description is the longer text of the module (optional).
	Description string
	// CheckMode: the program understands check: true (reports what it would
	// change, changes nothing). Without it the module is not run in check
	// mode and its result is unknown.
	CheckMode bool
	Timeout   time.Duration
	// MaxOutput bounds the bytes the program may print on stdout.
	MaxOutput int
}

// Problem is one error in module.yml, at a 1-based line and column (0 when
// unknown).
type Problem struct {
	Line, Col int
	Key       string
	Message   string
}

// Error renders p as line:col: message.
func (p Problem) Error() string { return fmt.Sprintf("%d:%d: %s", p.Line, p.Col, p.Message) }

// specKeys are the keys module.yml accepts.
var specKeys = []string{"summary", "description", "params", "output", "check_mode", "timeout", "max_output", "example"}

// paramKeys are the keys one entry of params: accepts.
var paramKeys = []string{"type", "required", "default", "description"}

// types maps the type names module.yml accepts to module param types.
var types = map[string]module.ParamType{
	"string": module.TypeString, "integer": module.TypeInt, "number": module.TypeNumber,
	"boolean": module.TypeBool, "list": module.TypeList, "map": module.TypeMap,
	"list[string]": module.TypeStrList, "any": module.TypeAny,
}

func typeNames() []string {
	out := make([]string, 0, len(types))
	for k := range types {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseSpec parses module.yml of the module dir (the directory name). It
// returns every problem found, with its line; the Spec is nil when there
// is any.
func ParseSpec(dir string, data []byte) (*Spec, []Problem) {
	sp := &specParser{}
	s := sp.parse(dir, data)
	if len(sp.problems) > 0 {
		return nil, sp.problems
	}
	return s, nil
}

type specParser struct{ problems []Problem }

func (sp *specParser) add(n *yaml.Node, key, format string, args ...any) {
	pr := Problem{Key: key, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		pr.Line, pr.Col = n.Line, n.Column
	}
	sp.problems = append(sp.problems, pr)
}

func (sp *specParser) parse(dir string, data []byte) (s *Spec) {
	defer func() {
		if r := recover(); r != nil {
			sp.add(nil, "", "cannot parse YAML: %v", r)
			s = nil
		}
	}()
	s = &Spec{Name: Prefix + dir, Timeout: DefaultTimeout, MaxOutput: DefaultMaxOutput}
	s.Schema.Params = map[string]module.Param{}
	s.Schema.RunsProgram = true
	if !NameRE.MatchString(dir) {
		sp.add(nil, "", "module directory name %q must start with a lower-case letter and hold only a-z, 0-9, _ and -", dir)
	}
	if len(data) > maxSpecSize {
		sp.add(nil, "", "module.yml is larger than %d bytes", maxSpecSize)
		return s
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		sp.add(&yaml.Node{Line: 1, Column: 1}, "", "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return s
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		sp.add(&yaml.Node{Line: 1, Column: 1}, "", "module.yml must be a map with at least summary: and params:")
		return s
	}
	root := doc.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			sp.add(k, k.Value, "key %s is given twice", k.Value)
		}
		seen[k.Value] = true
		switch k.Value {
		case "summary":
			s.Schema.Summary = sp.str(v, "summary")
		case "description":
			s.Description = sp.str(v, "description")
		case "example":
			s.Schema.Example = strings.TrimRight(sp.str(v, "example"), "\n")
		case "check_mode":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
				sp.add(v, "check_mode", "check_mode must be true or false")
			} else {
				s.CheckMode = v.Value == "true"
			}
		case "timeout":
			d, err := time.ParseDuration(v.Value)
			switch {
			case v.Kind != yaml.ScalarNode || err != nil:
				sp.add(v, "timeout", "timeout must be a duration such as 30s or 5m, got %q", v.Value)
			case d <= 0 || d > MaxTimeout:
				sp.add(v, "timeout", "timeout must be above 0 and at most %s, got %s", MaxTimeout, d)
			default:
				s.Timeout = d
			}
		case "max_output":
			var n int
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil || n <= 0 || n > MaxMaxOutput {
				sp.add(v, "max_output", "max_output must be a number of bytes in 1..%d, got %q", MaxMaxOutput, v.Value)
			} else {
				s.MaxOutput = n
			}
		case "params":
			sp.params(v, s)
		case "output":
			s.Schema.Output = sp.output(v)
		default:
			sp.add(k, k.Value, "unknown key %s in module.yml%s", k.Value, textutil.Suggest(k.Value, specKeys))
		}
	}
	if strings.TrimSpace(s.Schema.Summary) == "" {
		sp.add(root, "summary", "module.yml needs summary: (one line saying what the module does)")
	}
	if s.Schema.Example == "" {
		s.Schema.Example = defaultExample(s)
	}
	return s
}

func (sp *specParser) str(n *yaml.Node, key string) string {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!null") {
		sp.add(n, key, "%s must be a string", key)
		return ""
	}
	return n.Value
}

// params reads params: name → {type, required, default, description}.
func (sp *specParser) params(n *yaml.Node, s *Spec) {
	if n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		sp.add(n, "params", "params must be a map of param name to {type, required, default, description}")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := "params." + k.Value
		if !identRE.MatchString(k.Value) {
			sp.add(k, key, "param name %q must be an identifier (letters, digits, _)", k.Value)
			continue
		}
		if _, dup := s.Schema.Params[k.Value]; dup {
			sp.add(k, key, "param %s is declared twice", k.Value)
			continue
		}
		if v.Kind != yaml.MappingNode {
			sp.add(v, key, "param %s must be a map with type: (one of %s)", k.Value, strings.Join(typeNames(), ", "))
			continue
		}
		var p module.Param
		var defNode *yaml.Node
		typeGiven := false
		for j := 0; j+1 < len(v.Content); j += 2 {
			pk, pv := v.Content[j], v.Content[j+1]
			switch pk.Value {
			case "type":
				typeGiven = true
				t, ok := types[pv.Value]
				if !ok || pv.Kind != yaml.ScalarNode {
					sp.add(pv, key+".type", "param %s: unknown type %q (one of %s)%s", k.Value, pv.Value, strings.Join(typeNames(), ", "), textutil.Suggest(pv.Value, typeNames()))
					continue
				}
				p.Type = t
			case "required":
				if pv.Kind != yaml.ScalarNode || pv.Tag != "!!bool" {
					sp.add(pv, key+".required", "param %s: required must be true or false", k.Value)
					continue
				}
				p.Required = pv.Value == "true"
			case "default":
				defNode = pv
			case "description":
				p.Description = sp.str(pv, key+".description")
			default:
				sp.add(pk, key+"."+pk.Value, "param %s: unknown key %s%s", k.Value, pk.Value, textutil.Suggest(pk.Value, paramKeys))
			}
		}
		if p.Type == "" {
			if !typeGiven {
				sp.add(v, key+".type", "param %s needs type: (one of %s)", k.Value, strings.Join(typeNames(), ", "))
			}
			continue
		}
		if defNode != nil {
			var dv any
			if err := defNode.Decode(&dv); err != nil {
				sp.add(defNode, key+".default", "param %s: default: %v", k.Value, err)
			} else if !module.HasType(p.Type, dv) {
				sp.add(defNode, key+".default", "param %s: default must be %s", k.Value, p.Type)
			} else if p.Required {
				sp.add(defNode, key+".default", "param %s is required and has a default: keep one", k.Value)
			} else {
				p.Default = dv
			}
		}
		s.Schema.Params[k.Value] = p
	}
}

// output reads output: field → {type, description}.
func (sp *specParser) output(n *yaml.Node) map[string]module.Field {
	if n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		sp.add(n, "output", "output must be a map of field name to {type, description}")
		return nil
	}
	out := map[string]module.Field{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := "output." + k.Value
		if !identRE.MatchString(k.Value) {
			sp.add(k, key, "output field name %q must be an identifier (letters, digits, _)", k.Value)
			continue
		}
		if _, common := module.ResultFields[k.Value]; common {
			sp.add(k, key, "output field %s is a field every result has: pick another name", k.Value)
			continue
		}
		if v.Kind != yaml.MappingNode {
			sp.add(v, key, "output field %s must be a map with type:", k.Value)
			continue
		}
		var f module.Field
		for j := 0; j+1 < len(v.Content); j += 2 {
			fk, fv := v.Content[j], v.Content[j+1]
			switch fk.Value {
			case "type":
				t, ok := types[fv.Value]
				if !ok {
					sp.add(fv, key+".type", "output field %s: unknown type %q (one of %s)", k.Value, fv.Value, strings.Join(typeNames(), ", "))
					continue
				}
				f.Type = t
			case "description":
				f.Description = sp.str(fv, key+".description")
			default:
				sp.add(fk, key+"."+fk.Value, "output field %s: unknown key %s (keys: type, description)%s", k.Value, fk.Value, textutil.Suggest(fk.Value, []string{"type", "description"}))
			}
		}
		if f.Type == "" {
			sp.add(v, key+".type", "output field %s needs type:", k.Value)
			continue
		}
		out[k.Value] = f
	}
	return out
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// defaultExample makes a task calling the module with its required params.
func defaultExample(s *Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- name: use %s\n  module: %s\n", s.Name, s.Name)
	names := make([]string, 0, len(s.Schema.Params))
	for k, p := range s.Schema.Params {
		if p.Required {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		b.WriteString("  params:\n")
		for _, k := range names {
			fmt.Fprintf(&b, "    %s: …\n", k)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
