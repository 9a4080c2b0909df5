#!/usr/bin/env bash
# Runs Soul Stack's SPEC §15 benchmarks (see bench/README.md) and keeps
# their output, with the machine, date, Go version, commit and load, under
# bench/results/<date>/ (or $RESULTS), as <file>.txt or, with $RUN_TAG set,
# <file>-$RUN_TAG.txt (to keep repeated runs of one benchmark apart).
#
#   bench/run.sh [--help|--list] [NAME]...
#
# Default: all (every benchmark that needs neither root nor a lab; lab and
# realistic need root and build lab hosts, fanout50k takes a long time).
# The numbers are noisy on a shared machine: the benchmarks repeat (-count,
# -benchtime) and report medians.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${RESULTS:-bench/results/$(date -u +%Y-%m-%d)}

# name|file|environment|go test arguments|what
benchmarks=(
	"fanout|fanout-1000|SOULSTACK_BENCH_SOULS=1000|-bench ^BenchmarkFanOut\$ -benchtime 10x -count 3|one-task run over 1,000 souls (§1)"
	"fanout10k|fanout-10000|SOULSTACK_BENCH_SOULS=10000|-bench ^BenchmarkFanOut\$ -benchtime 5x -count 3|one-task run over 10,000 souls (§1)"
	"fanout50k|swarm-50k|SOULSTACK_BENCH_SOULS=50000 SOULSTACK_BENCH_SWARMS=3 SOULSTACK_BENCH_CONNECT_SECONDS=540 SOULSTACK_BENCH_SWARM_GOGC=50 SOULSTACK_BENCH_HEAPPROFILE=results/swarm-50k-heap.pb.gz SOULSTACK_BENCH_CONNECT_CPUPROFILE=results/swarm-50k-connect-cpu.pb.gz SOULSTACK_BENCH_CPUPROFILE=results/swarm-50k-cpu.pb.gz|-bench ^BenchmarkFanOut\$ -benchtime 3x|one-task run over 50,000 souls, profiles in bench/results/ (issue 23 item 2; needs ulimit -n > 50,200)"
	"swarm19k|swarm-50k-n19000|SOULSTACK_BENCH_SOULS=19000 SOULSTACK_BENCH_SWARMS=2 SOULSTACK_BENCH_CONNECT_SECONDS=540 SOULSTACK_BENCH_SWARM_GOGC=50 SOULSTACK_BENCH_HEAPPROFILE=results/swarm-50k-n19000-heap.pb.gz SOULSTACK_BENCH_CONNECT_CPUPROFILE=results/swarm-50k-n19000-connect-cpu.pb.gz SOULSTACK_BENCH_CPUPROFILE=results/swarm-50k-n19000-cpu.pb.gz|-bench ^BenchmarkFanOut\$ -benchtime 3x|the same with 19,000 souls in two swarms, about the most an open-file limit of 20,000 allows"
	"fanoutfew|fanout-few-10000|SOULSTACK_BENCH_SOULS=10000 SOULSTACK_BENCH_MEMBERS=3|-bench ^BenchmarkFanOutFew\$ -benchtime 10x|a 3-member incarnation among 10,000 souls (§1)"
	"idle|idle||-bench ^BenchmarkSoulIdle\$ -benchtime 3x|soul idle RSS and CPU (§2)"
	"checker|checker||-bench ^BenchmarkChecker\$ -benchtime 1x -count 2|100 concurrent procedure tasks and schedule ticks (§3)"
	"versus|versus||-bench ^BenchmarkVersusAnsible\$ -benchtime 10x|the four operations on swarm souls, 5/20/100 hosts (§4)"
	"lab|lab|SOULSTACK_BENCH_LAB=1|-bench ^BenchmarkVersusAnsibleLab\$ -benchtime 5x|the four operations vs a real Ansible on 20 systemd lab hosts (root; apt-get install ansible-core)"
	"lab20|lab-20-tuned|SOULSTACK_BENCH_LAB=1 SOULSTACK_BENCH_LAB_SMALL=20 SOULSTACK_BENCH_LAB_ANSIBLE_DEFAULTS=0|-bench ^BenchmarkVersusAnsibleLab\$ -benchtime 3x|the same, 20 hosts and tuned Ansible only, 3 rounds (a third of lab's time)"
	"realistic|realistic|SOULSTACK_BENCH_LAB=1|-bench ^BenchmarkRealisticLab\$ -benchtime 1x|realistic create vs Ansible vs the dpkg floor on systemd lab hosts (root)"
	"onboard|onboard||-bench ^BenchmarkOnboarding\$ -benchtime 3x|1,000 new souls onboarded (§5)"
	"resultbytes|result-bytes|SOULSTACK_BENCH_SOULS=1000|-bench ^BenchmarkResultBytes\$ -benchtime 10x|bytes per stored result (§6)"
	"growth|growth|SOULSTACK_BENCH_RUNS=100000|-bench ^BenchmarkGrowth\$ -benchtime 1x|history, run show, dashboard at 100,000 runs; runs.keep (§6)"
	"concurrency|concurrency-sqlite||-bench ^BenchmarkConcurrency\$ -benchtime 5x|100 incarnations x 10 souls at once, SQLite (§6)"
	"concurrency-pg|concurrency-postgres|SOULSTACK_BENCH_POSTGRES=1|-bench ^BenchmarkConcurrency\$ -benchtime 5x|the same on PostgreSQL (\$SOULSTACK_TEST_DATABASE_URL) (§6)"
	"ui|ui||-bench ^BenchmarkUIPages\$ -benchtime 20x -count 3|web UI pages over 10,000 souls"
	"health|health||-bench ^BenchmarkHealthChecks\$ -benchtime 1x -count 1|1,000 souls x 5 health checks every 10 s"
)
all=(fanout fanout10k idle checker versus onboard resultbytes growth concurrency ui health)

usage() {
	echo "usage: bench/run.sh [--help|--list] [NAME]...  (default: all = ${all[*]})"
	echo
	for b in "${benchmarks[@]}"; do
		IFS='|' read -r name file envs args what <<<"$b"
		printf '  %-15s %s\n' "$name" "$what"
	done
	echo "  all             ${all[*]}"
	echo
	echo "Output: $out/<file>[-\$RUN_TAG].txt; knobs: bench/README.md."
}

header() {
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
	echo "# $(go version); $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load: $(cut -d' ' -f1-3 /proc/loadavg)"
}

run() {
	if [ "$1" = all ]; then
		for b in "${all[@]}"; do run "$b"; done
		return
	fi
	for b in "${benchmarks[@]}"; do
		IFS='|' read -r name file envs args what <<<"$b"
		[ "$name" = "$1" ] || continue
		file=$file${RUN_TAG:+-$RUN_TAG}
		mkdir -p "$out"
		echo "== $name → $out/$file.txt"
		# shellcheck disable=SC2086 # envs and args are word lists
		{
			header
			env $envs go test ./bench/ -run '^$' -timeout 3h $args -v 2>&1
		} | tee "$out/$file.txt"
		# A benchmark that skips (no root, no $SOULSTACK_TEST_DATABASE_URL, …)
		# still passes: say so instead of leaving an empty result behind.
		if grep -q -- '--- SKIP' "$out/$file.txt"; then
			echo "bench/run.sh: $name was skipped (the reason is in $out/$file.txt)" >&2
			exit 3
		fi
		return 0
	done
	echo "unknown benchmark $1" >&2
	usage >&2
	exit 2
}

case ${1:-} in
-h | --help | help | -l | --list | list)
	usage
	exit 0
	;;
esac
for b in "${@:-all}"; do run "$b"; done
