package dsl

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// delegate parses delegate: [coven, …] (SPEC §9) and checks where it may
// stand: on a module task inside a block with serial:, never with on:
// keeper or its own serial:. present holds every key given on the task.
func (p *parser) delegate(u *unit, file string, t *Task, n *yaml.Node, present map[string]bool) *Delegate {
	n = deref(n)
	pos := posOf(file, n)
	const form = "delegate: takes a list of coven names whose members run the task for each host of the wave, e.g. delegate: [lb]"
	if n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str" && covenRE.MatchString(n.Value) {
		p.add(pos, "delegate", fmt.Sprintf("%s: write delegate: [%s]", form, n.Value))
		return nil
	}
	items, ok := p.sequence(file, n, "delegate")
	if !ok {
		p.add(pos, "delegate", form)
		return nil
	}
	if len(items) == 0 {
		p.add(pos, "delegate", "delegate: [] names no coven: "+form+", or drop delegate: to run the task on the wave's hosts")
		return nil
	}
	d := &Delegate{Pos: pos}
	valid := true
	for _, it := range items {
		it = deref(it)
		ipos := posOf(file, it)
		if it == nil || it.Kind != yaml.ScalarNode || it.Tag != "!!str" {
			p.add(ipos, "delegate", fmt.Sprintf("delegate: items must be coven names, got %s", kindName(it)))
			valid = false
			continue
		}
		if it.Value == "keeper" {
			p.add(ipos, "delegate", "delegate: [keeper] is not supported: delegate: names covens of souls; run keeper-side work in its own task with on: keeper")
			valid = false
			continue
		}
		if !covenRE.MatchString(it.Value) {
			p.add(ipos, "delegate", fmt.Sprintf("delegate: %q is not a coven name (letters, digits, _ . -): delegate: takes literal coven names, never expressions", it.Value))
			valid = false
			continue
		}
		d.Covens = append(d.Covens, it.Value)
		d.CovenPos = append(d.CovenPos, ipos)
	}
	kpos := keyPos(t, "delegate")
	switch {
	case present["apply"] || present["block"] || present["include"]:
		p.add(kpos, "delegate", "delegate: goes on a task with module:: put it on each task of the block that the delegates run, or call the module directly instead of apply:")
		valid = false
	case t.On != nil && t.On.Keeper:
		p.add(kpos, "delegate", "delegate: and on: keeper are exclusive: a delegated task runs on the delegate covens' souls")
		valid = false
	case present["serial"]:
		p.add(kpos, "delegate", "delegate: and serial: on the same task are exclusive: put the delegated task inside a block: with serial:, whose waves it acts for")
		valid = false
	case u.serialDepth == 0:
		p.add(kpos, "delegate", "delegate: only works inside a block with serial: (the task runs on the delegates for each host of the wave): wrap the wave's tasks in a block: with serial: and put this task inside it")
		valid = false
	}
	if !valid {
		return nil
	}
	return d
}
