package checker

import (
	"fmt"
	"regexp"
	"strings"
)

// Command is an apicall command line, split shell-like at load time:
// whitespace separates arguments, '…' is literal, "…" honours \" and \\,
// a backslash outside quotes escapes the next character. A {{ }}
// placeholder (inside quotes or not) is expanded into the argument it sits
// in and is never split or re-quoted, so a value with spaces or quotes
// stays one argument.
type Command struct {
	src  string
	args [][]part
}

// ParseCommand splits src into arguments with their placeholders.
func ParseCommand(src string) (*Command, error) {
	c := &Command{src: src}
	var (
		cur     []part
		text    strings.Builder
		inArg   bool
		quote   byte
		flushTx = func() {
			if text.Len() > 0 {
				cur = append(cur, part{text: text.String()})
				text.Reset()
			}
		}
	)
	endArg := func() {
		flushTx()
		if inArg {
			if cur == nil {
				cur = []part{} // an empty quoted argument ''
			}
			c.args = append(c.args, cur)
		}
		cur, inArg = nil, false
	}
	for i := 0; i < len(src); i++ {
		if strings.HasPrefix(src[i:], "{{") && indexPlaceholder(src[i:]) == 0 {
			body, n, err := scanPlaceholder(src[i+2:])
			if err != nil {
				return nil, fmt.Errorf("command %q: %w", src, err)
			}
			p, err := parsePlaceholder(body)
			if err != nil {
				return nil, fmt.Errorf("command %q: %w", src, err)
			}
			flushTx()
			cur = append(cur, p)
			inArg = true
			i += 2 + n - 1
			continue
		}
		ch := src[i]
		switch quote {
		case 0:
			switch {
			case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
				endArg()
			case ch == '\'' || ch == '"':
				quote, inArg = ch, true
			case ch == '\\' && i+1 < len(src):
				i++
				text.WriteByte(src[i])
				inArg = true
			default:
				text.WriteByte(ch)
				inArg = true
			}
		case '\'':
			if ch == '\'' {
				quote = 0
			} else {
				text.WriteByte(ch)
			}
		case '"':
			switch {
			case ch == '"':
				quote = 0
			case ch == '\\' && i+1 < len(src) && strings.IndexByte(`"\$`+"`", src[i+1]) >= 0:
				i++
				text.WriteByte(src[i])
			default:
				text.WriteByte(ch)
			}
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("command %q: unterminated %c quote", src, quote)
	}
	endArg()
	if len(c.args) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return c, nil
}

// String returns the command's source.
func (c *Command) String() string { return c.src }

// Vars lists the var names the command references.
func (c *Command) Vars() []string {
	var out []string
	for _, a := range c.args {
		for _, p := range a {
			if p.ref {
				out = append(out, p.name)
			}
		}
	}
	return out
}

// Argv renders the command's arguments with vars. A value that would
// start an argument with '-' is refused (a negative number excepted): the
// program would read it as an option, so a var — which may come from a
// launch, another system's JSON or a soul's facts — could add flags to the
// command. As a flag's value written --flag={{ v }} it is safe.
func (c *Command) Argv(vars map[string]any) ([]string, error) {
	argv := make([]string, 0, len(c.args))
	for _, a := range c.args {
		var sb strings.Builder
		for i, p := range a {
			if !p.ref {
				sb.WriteString(p.text)
				continue
			}
			s, err := p.render(vars)
			if err != nil {
				return nil, fmt.Errorf("command %q: %w", c.src, err)
			}
			if i == 0 && strings.HasPrefix(s, "-") && !negativeNumber.MatchString(s) {
				return nil, fmt.Errorf("command %q: {{ %s }} is %q, which would start an argument with '-' and be read as an option; write --flag={{ %s }} to pass such a value", c.src, p.name, s, p.name)
			}
			sb.WriteString(s)
		}
		argv = append(argv, sb.String())
	}
	return argv, nil
}

var negativeNumber = regexp.MustCompile(`^-[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
