package dsl

import (
	"strings"
	"testing"
	"testing/fstest"
)

func ruleRepo(rule string) fstest.MapFS {
	return fstest.MapFS{
		"service.yml": {Data: []byte("name: svc\n")},
		"scenario/restart/main.yml": {Data: []byte(`input:
  host: {type: string, required: true}
  count: {type: integer, default: 1}
tasks:
  - name: restart
    module: core.test.ping
`)},
		"rules/heal.yml": {Data: []byte(rule)},
	}
}

func TestRuleValid(t *testing.T) {
	svc, ps := LoadFS(ruleRepo(`description: restart on a confirmed CRITICAL
on: health.changed
if: event.check == "daemon" && event.to == "CRITICAL" && event.streak == 2
do:
  run:
    scenario: restart
    input: {host: "${ event.sid }", count: "${ event.streak }"}
cooldown: 5m
max_per_hour: 6
max_concurrent: 1
`))
	if len(ps) > 0 {
		t.Fatalf("problems: %v", ps)
	}
	r := svc.Rules["heal"]
	if r == nil || r.On != EventHealthChanged || r.Do.Kind != ActionRun || r.Do.Scenario != "restart" || r.MaxPerHour != 6 {
		t.Fatalf("rule = %+v", r)
	}
	if r.Dedup == "" || r.ResolveIf != `event.to == "OK"` {
		t.Errorf("defaults: dedup %q resolve %q", r.Dedup, r.ResolveIf)
	}
}

func TestRuleProblems(t *testing.T) {
	guard := "cooldown: 1m\nmax_per_hour: 1\nmax_concurrent: 1\n"
	cases := []struct{ name, rule, want string }{
		{"unknown kind", "on: health.changd\ndo: {notify: {endpoint: x, message: m}}\n" + guard,
			`rules/heal.yml:1:5: unknown event kind "health.changd" (did you mean health.changed?)`},
		{"field of another kind", "on: run.ended\nif: event.check == \"x\"\ndo: {notify: {endpoint: x, message: m}}\n" + guard,
			"rules/heal.yml:2:5: if: col 6: event(run.ended) has no field check"},
		{"not boolean", "on: run.ended\nif: event.status\ndo: {notify: {endpoint: x, message: m}}\n" + guard,
			"rules/heal.yml:2:5: if: must be a boolean predicate, but it yields string"},
		{"type mismatch", "on: health.changed\nif: event.streak == \"2\"\ndo: {notify: {endpoint: x, message: m}}\n" + guard,
			"rules/heal.yml:2:5: if: col 14: operator == cannot take"},
		{"missing guardrails", "on: run.ended\ndo: {notify: {endpoint: x, message: m}}\n",
			"rules/heal.yml:1:1: rule heal has no cooldown"},
		{"unknown input", "on: health.changed\ndo:\n  run:\n    scenario: restart\n    input: {host: x, hots: y}\n" + guard,
			"rules/heal.yml:5:22: scenario restart has no input hots"},
		{"input type", "on: health.changed\ndo:\n  run:\n    scenario: restart\n    input: {host: \"${ event.streak }\"}\n" + guard,
			`rules/heal.yml:5:19: input host of scenario restart is string, but "${ event.streak }" yields int`},
		{"unknown scenario", "on: health.changed\ndo:\n  run:\n    scenario: restrat\n    input: {host: x}\n" + guard,
			`rules/heal.yml:4:15: the service has no scenario "restrat" (did you mean restart?)`},
		{"two actions", "on: run.ended\ndo: {notify: {endpoint: x, message: m}, procedure: {name: p}}\n" + guard,
			"do: takes exactly one action"},
		{"schedule in repo", "on: schedule.missed\ndo: {notify: {endpoint: x, message: m}}\n" + guard,
			"give it as a Keeper-wide rule"},
		{"bad per hour", "on: run.ended\ndo: {notify: {endpoint: x, message: m}}\ncooldown: 1m\nmax_per_hour: 0\nmax_concurrent: 1\n",
			"rules/heal.yml:4:15: max_per_hour must be an integer from 1 to 10000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ps := LoadFS(ruleRepo(c.rule))
			if !strings.Contains(ps.Error(), c.want) {
				t.Fatalf("problems:\n%v\nwant one containing %q", ps.Error(), c.want)
			}
		})
	}
}

func TestParseKeeperRule(t *testing.T) {
	r, err := ParseRule("page", []byte("on: run.ended\nif: event.status == \"failed\"\ndo:\n  run: {scenario: diag, incarnation: \"${ event.incarnation }\"}\ncooldown: 0s\nmax_per_hour: 10\nmax_concurrent: 2\n"))
	if err != nil || r.Do.Incarnation != "${ event.incarnation }" {
		t.Fatalf("ParseRule = %+v, %v", r, err)
	}
	_, err = ParseRule("missed", []byte("on: schedule.missed\ndo:\n  run: {scenario: diag}\ncooldown: 0s\nmax_per_hour: 10\nmax_concurrent: 2\n"))
	if err == nil || !strings.Contains(err.Error(), "service repository is invalid") {
		t.Fatalf("ParseRule of a run without incarnation = %v", err)
	}
}
