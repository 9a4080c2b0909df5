// Package bench holds Soul Stack's end-to-end benchmarks of SPEC §15: the
// fan-out of a run through the whole product (HTTP API, run engine, soul
// gateway, real souls in a `soul swarm` process, SQLite store and commit),
// the keeper's memory per connected soul, the idle footprint of one soul,
// the Checker under 100 concurrent procedure tasks, and the operations of
// the Ansible comparison. Everything is in _test.go files: `go test ./...`
// runs only a fast sanity test; the benchmarks run with -bench (see
// README.md and run.sh).
package bench
