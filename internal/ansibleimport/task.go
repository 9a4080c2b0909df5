package ansibleimport

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Task is one Ansible task (or block) as written, with where it is.
type Task struct {
	// File is the path the report shows ("tasks/main.yml"); Line is the
	// task's first line in it.
	File string
	Line int
	Name string
	// Module is the short module name (ansible.builtin.template →
	// template); FQCN is the name as written.
	Module, FQCN string
	// Args are the module's arguments: the map written under the module,
	// merged with args:, or the key=value pairs of a free-form string.
	Args map[string]any
	// ArgLines are the lines of the arguments written as a map.
	ArgLines map[string]int
	// FreeForm is the free-form part of a module written as a string
	// (command, shell, raw, include_tasks), without its key=value pairs.
	FreeForm string
	// Keywords are the task keywords (when, loop, register, notify, …).
	Keywords map[string]*yaml.Node
	// Block, Rescue and Always are a block's task lists.
	Block, Rescue, Always []*Task
	IsBlock               bool
}

// taskKeywords are Ansible's task and block keywords: every other key of a
// task is its module.
var taskKeywords = map[string]bool{
	"name": true, "action": true, "local_action": true, "args": true, "any_errors_fatal": true,
	"async": true, "become": true, "become_exe": true, "become_flags": true, "become_method": true, "become_user": true,
	"block": true, "rescue": true, "always": true, "changed_when": true, "check_mode": true, "collections": true,
	"connection": true, "debugger": true, "delay": true, "delegate_facts": true, "delegate_to": true, "diff": true,
	"environment": true, "failed_when": true, "ignore_errors": true, "ignore_unreachable": true, "listen": true,
	"loop": true, "loop_control": true, "module_defaults": true, "no_log": true, "notify": true, "poll": true,
	"port": true, "register": true, "remote_user": true, "retries": true, "run_once": true, "tags": true,
	"throttle": true, "timeout": true, "until": true, "vars": true, "when": true,
}

// LoadTasks reads a task list file; file is the path the report shows.
func LoadTasks(path, file string) ([]*Task, error) {
	var doc yaml.Node
	if err := readYAML(path, &doc); err != nil {
		return nil, err
	}
	root := docRoot(&doc)
	if root == nil {
		return nil, nil
	}
	return parseTasks(root, file)
}

func parseTasks(n *yaml.Node, file string) ([]*Task, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: a task list must be a YAML list", file, n.Line)
	}
	out := make([]*Task, 0, len(n.Content))
	for _, item := range n.Content {
		t, err := parseTask(item, file)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseTask(n *yaml.Node, file string) (*Task, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: a task must be a map", file, n.Line)
	}
	t := &Task{File: file, Line: n.Line, Keywords: map[string]*yaml.Node{}, Args: map[string]any{}, ArgLines: map[string]int{}}
	var modKey, modVal *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		switch {
		case key == "name":
			t.Name = v.Value
		case key == "block" || key == "rescue" || key == "always":
			ts, err := parseTasks(v, file)
			if err != nil {
				return nil, err
			}
			t.IsBlock = true
			switch key {
			case "block":
				t.Block = ts
			case "rescue":
				t.Rescue = ts
			default:
				t.Always = ts
			}
		case key == "action" || key == "local_action":
			t.Keywords[key] = v
			if v.Kind == yaml.ScalarNode {
				mod, rest, _ := strings.Cut(strings.TrimSpace(v.Value), " ")
				modKey = &yaml.Node{Kind: yaml.ScalarNode, Value: mod, Line: v.Line}
				modVal = &yaml.Node{Kind: yaml.ScalarNode, Value: rest, Line: v.Line}
			} else if m := lookupPath(v, "module"); m != nil {
				modKey = m
				modVal = v
			}
		case taskKeywords[key] || strings.HasPrefix(key, "with_"):
			t.Keywords[key] = v
		default:
			if modKey != nil {
				return nil, fmt.Errorf("%s:%d: task %q names two modules, %s and %s", file, k.Line, t.Name, modKey.Value, key)
			}
			modKey, modVal = k, v
		}
	}
	if t.IsBlock {
		if modKey != nil {
			return nil, fmt.Errorf("%s:%d: a block cannot also call the module %s", file, n.Line, modKey.Value)
		}
		return t, nil
	}
	if modKey == nil {
		return nil, fmt.Errorf("%s:%d: task %q calls no module", file, n.Line, t.Name)
	}
	t.FQCN = modKey.Value
	t.Module = shortName(modKey.Value)
	if err := t.readArgs(modVal); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, modVal.Line, err)
	}
	if a, ok := t.Keywords["args"]; ok {
		if err := t.readArgs(a); err != nil {
			return nil, fmt.Errorf("%s:%d: args: %w", file, a.Line, err)
		}
	}
	return t, nil
}

// shortName drops the collection of a module name: ansible.builtin.copy,
// ansible.posix.mount and community.general.ini_file are copy, mount and
// ini_file.
func shortName(fqcn string) string {
	if i := strings.LastIndex(fqcn, "."); i >= 0 {
		return fqcn[i+1:]
	}
	return fqcn
}

func (t *Task) readArgs(v *yaml.Node) error {
	switch v.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			k := v.Content[i].Value
			if k == "module" && t.Keywords["action"] != nil {
				continue
			}
			var val any
			if err := v.Content[i+1].Decode(&val); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			t.Args[k] = val
			t.ArgLines[k] = v.Content[i+1].Line
		}
	case yaml.ScalarNode:
		free, kv := splitFreeForm(v.Value, commandModules[t.Module])
		t.FreeForm = free
		for k, val := range kv {
			t.Args[k] = val
			t.ArgLines[k] = v.Line
		}
	}
	return nil
}

// commandModules keep their free-form text as the command: a key=value
// word is an option only when its key is one of commandWordOptions (Ansible's
// parse_kv with check_raw), so `make prefix=/usr all` stays the command.
var commandModules = map[string]bool{"command": true, "shell": true, "raw": true, "script": true}

var commandWordOptions = map[string]bool{"creates": true, "removes": true, "chdir": true, "executable": true, "warn": true,
	"stdin": true, "stdin_add_newline": true, "strip_empty_ends": true}

// splitFreeForm splits Ansible's "k=v k2='v 2' rest" into the key=value
// pairs and the words that are not pairs, as Ansible's parse_kv does
// (quotes group words; a word is a pair when its key is an identifier).
func splitFreeForm(s string, checkRaw bool) (string, map[string]string) {
	kv := map[string]string{}
	var free []string
	for _, w := range shellWords(s) {
		k, v, ok := strings.Cut(w.text, "=")
		if ok && isIdent(k) && !w.quotedKey && (!checkRaw || commandWordOptions[k]) {
			kv[k] = unquote(v)
			continue
		}
		free = append(free, w.raw)
	}
	return strings.Join(free, " "), kv
}

type word struct {
	raw, text string
	quotedKey bool
}

// shellWords splits s on spaces outside quotes and outside Jinja's {{ }}
// and {% %}, as Ansible's split_args does, keeping each word's raw text.
func shellWords(s string) []word {
	var out []word
	var quote byte
	depth, start := 0, -1
	flush := func(end int) {
		if start >= 0 {
			raw := s[start:end]
			out = append(out, word{raw: raw, text: raw, quotedKey: raw[0] == '\'' || raw[0] == '"'})
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '{' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '%'):
			depth++
			i++
		case (c == '}' || c == '%') && i+1 < len(s) && s[i+1] == '}' && depth > 0:
			depth--
			i++
		case c == '\'' || c == '"':
			quote = c
		case depth == 0 && (c == ' ' || c == '\t' || c == '\n'):
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			if (c == '{' || c == '}' || c == '%') && i > 0 && (s[i-1] == '{' || s[i-1] == '}' || s[i-1] == '%') {
				start = i - 1
			}
		}
	}
	flush(len(s))
	return out
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// keyword returns the scalar value of a keyword, "" when absent.
func (t *Task) keyword(k string) string {
	if n, ok := t.Keywords[k]; ok && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}
