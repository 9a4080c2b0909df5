#!/usr/bin/env bash
# Runs Soul Stack's SPEC §15 benchmarks (see bench/README.md) and keeps
# their output, with the machine, date, Go version and commit, under
# bench/results/<date>/ (or $RESULTS), as <name>.txt or, with $RUN_TAG set,
# <name>-$RUN_TAG.txt (to keep repeated runs of one benchmark apart).
#
#   bench/run.sh [fanout|fanout10k|fanout50k|idle|checker|versus|ui|resultbytes|growth|concurrency|concurrency-pg|health|lab|realistic|all]...
#
# Default: all but lab (lab needs root and builds a lab of 20 Debian hosts;
# it also compares against Ansible when ansible-playbook is installed:
# apt-get install ansible). The numbers are noisy on a shared machine: each
# benchmark repeats (-count) and reports medians.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${RESULTS:-bench/results/$(date -u +%Y-%m-%d)}
mkdir -p "$out"

header() {
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
	echo "# $(go version); $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load: $(cut -d' ' -f1-3 /proc/loadavg)"
}

bench() { # name, then go test arguments
	local name=$1${RUN_TAG:+-$RUN_TAG}
	shift
	echo "== $name → $out/$name.txt"
	{
		header
		go test ./bench/ -run '^$' -timeout 3h "$@" 2>&1
	} | tee "$out/$name.txt"
}

run() {
	case $1 in
	fanout) SOULSTACK_BENCH_SOULS=1000 bench fanout-1000 -bench '^BenchmarkFanOut$' -benchtime 10x -count 3 -v ;;
	fanout10k) SOULSTACK_BENCH_SOULS=10000 bench fanout-10000 -bench '^BenchmarkFanOut$' -benchtime 5x -count 3 -v ;;
	fanout50k) SOULSTACK_BENCH_SOULS=50000 SOULSTACK_BENCH_SWARMS=2 bench fanout-50000 -bench '^BenchmarkFanOut$' -benchtime 3x -v ;;
	idle) bench idle -bench '^BenchmarkSoulIdle$' -benchtime 3x -v ;;
	checker) bench checker -bench '^BenchmarkChecker$' -benchtime 1x -count 2 -v ;;
	versus) bench versus -bench '^BenchmarkVersusAnsible$' -benchtime 10x -v ;;
	ui) bench ui -bench '^BenchmarkUIPages$' -benchtime 20x -count 3 -v ;;
	resultbytes) SOULSTACK_BENCH_SOULS=1000 bench result-bytes -bench '^BenchmarkResultBytes$' -benchtime 10x -v ;;
	growth) SOULSTACK_BENCH_RUNS=100000 bench growth -bench '^BenchmarkGrowth$' -benchtime 1x -v ;;
	concurrency) bench concurrency-sqlite -bench '^BenchmarkConcurrency$' -benchtime 5x -v ;;
	concurrency-pg) SOULSTACK_BENCH_POSTGRES=1 bench concurrency-postgres -bench '^BenchmarkConcurrency$' -benchtime 5x -v ;;
	health) bench health -bench '^BenchmarkHealthChecks$' -benchtime 1x -count 1 -v ;;
	realistic) SOULSTACK_BENCH_LAB=1 bench realistic -bench '^BenchmarkRealisticLab$' -benchtime 1x -v ;;
	lab) SOULSTACK_BENCH_LAB=1 bench lab -bench '^BenchmarkVersusAnsibleLab$' -benchtime 5x -v ;;
	all) for b in fanout fanout10k idle checker versus ui resultbytes growth concurrency health; do run "$b"; done ;;
	*)
		echo "unknown benchmark $1 (fanout fanout10k fanout50k idle checker versus ui resultbytes growth concurrency concurrency-pg health lab realistic all)" >&2
		exit 2
		;;
	esac
}

for b in "${@:-all}"; do run "$b"; done
