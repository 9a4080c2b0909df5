#!/usr/bin/env bash
# The one test command (make test, .ci/run): installs what the tests need,
# then runs every Go test with the race detector, plus short fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/test-deps.sh

export SOULSTACK_TEST_DATABASE_URL="${SOULSTACK_TEST_DATABASE_URL:-postgres://soulstack:soulstack@127.0.0.1:5432/postgres?sslmode=disable}"

gofmt_out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$gofmt_out" ]; then echo "gofmt needed on:"; echo "$gofmt_out"; exit 1; fi
go vet ./...
# Every group runs even when an earlier one failed (one CI run reports all
# failures); the script fails at the end if any did.
failed=()
run() { "$@" || failed+=("$*"); }
# The lab packages (hosts booted from overlays on this machine's disk) run
# after the rest and one package at a time: each boots its own hosts, and
# two labs booting and installing packages at once on 2 cores only make
# both slower.
lab_pkgs=$(go list ./internal/lab/... ./test/...)
run go test -race -count=1 -timeout 25m $(go list ./... | grep -vxF "$lab_pkgs")
# The UI's 10,000-soul browser test once more without the race detector,
# which slows SQLite (C compiled to Go) 30-50 times over: only there does
# its bound (the benchmark's 300 ms of server time per page) hold as stated.
run go test -count=1 -run '^TestBrowserTenThousandSouls$' ./internal/ui
# Likewise the lean soul stream's reader stack (8 KiB per idle soul): the
# race detector's instrumentation makes every frame larger.
run go test -count=1 -run '^TestLeanReaderStackIsSmall$' ./internal/gateway
# Flush what the first group wrote (gigabytes of builds and databases), so
# the lab hosts' services do not wait on it when they fsync.
sync
run go test -race -count=1 -timeout 25m -p 1 $lab_pkgs

# Short fuzz runs: each target a fixed number of inputs (FUZZTIME to change).
# A count, not a duration: with a duration, go1.26's fuzz coordinator can
# report its own deadline as a failure ("context deadline exceeded", no
# failing input written; go.dev/issue/75804, fixed in go1.27).
# Minimizing each new input is bounded by a count too (by default it may
# take up to 60 s per input, which made a cold run take minutes).
ft="${FUZZTIME:-5000x}"
for spec in $(grep -rl --include='*_test.go' '^func Fuzz' internal | xargs -r grep -ho '^func Fuzz[A-Za-z0-9_]*' | sort -u | sed 's/func //'); do
  pkg=$(dirname "$(grep -rl --include='*_test.go' "^func $spec(" internal | head -1)")
  echo "fuzz $spec in ./$pkg for $ft"
  run go test -run '^$' -fuzz "^$spec\$" -fuzztime "$ft" -fuzzminimizetime 100x "./$pkg"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED:"; printf '  %s\n' "${failed[@]}" | cut -c1-200
  exit 1
fi
echo "all tests passed"
