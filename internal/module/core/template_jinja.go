package core

import (
	"fmt"
	"maps"
	"strings"

	"github.com/soulstack/soulstack/internal/jinja"
	"github.com/soulstack/soulstack/internal/module"
)

// jinjaParams adds the engine choice and Jinja's environment settings to
// core.file.rendered's params.
func jinjaParams(p map[string]module.Param) map[string]module.Param {
	p["engine"] = module.Param{Type: module.TypeString, Description: "template engine: jinja (Jinja2, rendered as Ansible's template module does) or go (text/template with Sprig); omitted: jinja for a template ending in .j2, go otherwise", Check: func(s string) error {
		if s != "jinja" && s != "go" {
			return fmt.Errorf("engine %q: want jinja or go", s)
		}
		return nil
	}}
	p["trim_blocks"] = module.Param{Type: module.TypeBool, Default: true, Description: "Jinja only: remove the first newline after a block tag (Ansible's default: true)"}
	p["lstrip_blocks"] = module.Param{Type: module.TypeBool, Default: false, Description: "Jinja only: strip spaces and tabs from the start of a line to a block tag"}
	p["newline_sequence"] = module.Param{Type: module.TypeString, Default: `\n`, Description: `Jinja only: line ending of the rendered file, \n, \r\n or \r (written as these escapes or as the characters)`, Check: func(s string) error {
		_, err := jinja.ParseNewline(s)
		return err
	}}
	return p
}

// engine is how a template renders.
type engine struct {
	jinja bool
	opts  jinja.Options
}

// engineOf is the default engine of a template (by its suffix).
func engineOf(name string) engine {
	return engine{jinja: jinja.Selected(name, ""), opts: jinja.Default()}
}

// parseEngine reads engine and the Jinja settings; the settings are an
// error with the Go engine.
func parseEngine(a *args, name string) (engine, error) {
	eng := engineOf(name)
	kind := a.str("engine")
	if a.err != nil {
		return eng, a.err
	}
	if kind != "" && kind != "jinja" && kind != "go" {
		return eng, fmt.Errorf("engine %q: want jinja or go", kind)
	}
	eng.jinja = jinja.Selected(name, kind)
	if !eng.jinja {
		for _, k := range jinja.OnlyParams() {
			if a.has(k) {
				return eng, fmt.Errorf("%s is a Jinja setting, but template %s renders with the Go engine: drop %s, or set engine: jinja", k, name, k)
			}
		}
		return eng, nil
	}
	eng.opts.TrimBlocks = a.boolean("trim_blocks", true)
	eng.opts.LstripBlocks = a.boolean("lstrip_blocks", false)
	if a.has("newline_sequence") {
		nl, err := jinja.ParseNewline(a.str("newline_sequence"))
		if err != nil {
			return eng, err
		}
		eng.opts.NewlineSequence = nl
	}
	return eng, a.err
}

// renderJinja renders the Jinja template name with the same data as a Go
// template (task vars at the top level and under vars, input, essence,
// soulprint) and Ansible's magic variables that roles use: ansible_managed
// (jinja.ManagedDefault unless a var sets it), inventory_hostname (the
// SID), ansible_hostname (the short hostname) and ansible_fqdn (the
// hostname, or the SID when it extends the short hostname), from the
// soulprint; data of the same name wins.
func renderJinja(env *module.Env, name string, vars map[string]any, o jinja.Options) ([]byte, error) {
	data := make(map[string]any, len(env.TemplateData)+len(vars)+4)
	if self, ok := selfFacts(env.TemplateData); ok {
		h, _ := self["hostname"].(string)
		sid, _ := self["sid"].(string)
		short := strings.SplitN(h, ".", 2)[0]
		if h != "" {
			data["ansible_hostname"] = short
			data["ansible_fqdn"] = h
		}
		if sid != "" {
			data["inventory_hostname"] = sid
			if h != "" && !strings.Contains(h, ".") && strings.HasPrefix(sid, short+".") {
				data["ansible_fqdn"] = sid
			}
		}
	}
	maps.Copy(data, env.TemplateData)
	maps.Copy(data, vars)
	if len(vars) > 0 {
		merged := map[string]any{}
		if tv, ok := env.TemplateData["vars"].(map[string]any); ok {
			maps.Copy(merged, tv)
		}
		maps.Copy(merged, vars)
		data["vars"] = merged
	}
	o.MaxBytes = MaxRenderedBytes
	o.MapKeys = env.MapKeys
	out, err := jinja.Render(env.Files, name, data, o)
	if err != nil {
		return nil, fmt.Errorf("rendering template: %w", err)
	}
	return out, nil
}

func selfFacts(d map[string]any) (map[string]any, bool) {
	sp, _ := d["soulprint"].(map[string]any)
	self, ok := sp["self"].(map[string]any)
	return self, ok
}
