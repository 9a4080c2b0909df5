// Package e2e holds the end-to-end tests of Soul Stack on real hosts (SPEC
// §16): a lab of isolated Debian hosts (internal/lab), a real Keeper
// process on the machine side, a real soul inside every host, and the
// example Redis service deployed, rolled and broken on purpose.
//
// The tests need root (network namespaces, mounts). Without root they
// skip, except in CI (CI=true), where they fail: CI must run them.
//
// Run them alone with
//
//	sudo go test -count=1 -v ./test/e2e
//
// The lab is named "e2e-redis"; a killed run leaves it behind, and the next
// run (or `go run ./internal/lab/labctl down --name e2e-redis`) removes it.
package e2e
