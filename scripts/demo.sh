#!/usr/bin/env bash
# The main job of the README (make demo): start `keeper dev` in the
# background — a Keeper on SQLite with 3 local souls, each confined to its
# own directory — create an incarnation of the bundled hello service across
# the souls with live progress, and show its committed state and history.
# The keeper and the souls keep running for you to explore; `make demo-stop`
# (scripts/demo.sh stop) stops them.
#
# Environment: BIN (where keeper, soul and soulctl are; default bin),
# SOULSTACK_DEV_DIR (default .soulstack-dev), SOULSTACK_DEV_LISTEN (default
# 127.0.0.1:8080, or any free port when that one is taken).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
DIR=${SOULSTACK_DEV_DIR:-.soulstack-dev}
LISTEN=${SOULSTACK_DEV_LISTEN:-}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
[ -t 1 ] || say() { printf '\n== %s\n' "$*"; }

# running_pid prints the pid of the keeper dev of $DIR if it is alive.
running_pid() {
  [ -f "$DIR/dev.json" ] || return 1
  local pid
  pid=$(sed -n 's/^ *"pid": *\([0-9][0-9]*\).*/\1/p' "$DIR/dev.json")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

stop() {
  local pid
  if ! pid=$(running_pid); then
    echo "no keeper dev running in $DIR"
    return 0
  fi
  echo "stopping keeper dev (pid $pid): souls first, then the keeper"
  kill -TERM "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { echo "stopped"; return 0; }
    sleep 0.1
  done
  echo "keeper dev did not stop in 10s; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
}

if [ "${1:-}" = stop ]; then
  stop
  exit 0
fi

for b in keeper soul soulctl; do
  [ -x "$BIN/$b" ] || { echo "$BIN/$b is missing: run make build (or make demo)" >&2; exit 2; }
done
soulctl() { "$BIN/soulctl" "$@"; }
started=$(date +%s)

# A demo starts afresh: an earlier one is stopped and its data removed.
stop >/dev/null
rm -rf "$DIR"
mkdir -p "$DIR"

if [ -z "$LISTEN" ]; then
  LISTEN=127.0.0.1:8080
  if (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null; then
    echo "127.0.0.1:8080 is taken; keeper dev will listen on a free port"
    LISTEN=127.0.0.1:0
  fi
fi

say "Starting keeper dev: a Keeper on SQLite and 3 souls (log: $DIR/dev.log)"
nohup "$BIN/keeper" dev --data-dir "$DIR" --listen "$LISTEN" --souls 3 >"$DIR/dev.log" 2>&1 </dev/null &
pid=$!
for _ in $(seq 1 600); do
  [ -f "$DIR/dev.json" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "keeper dev exited:" >&2
    tail -n 20 "$DIR/dev.log" >&2
    exit 1
  fi
  sleep 0.1
done
[ -f "$DIR/dev.json" ] || { echo "keeper dev did not come up in 60s; see $DIR/dev.log" >&2; exit 1; }
URL=$(sed -n 's/^ *"url": *"\([^"]*\)".*/\1/p' "$DIR/dev.json")
# The commands below name the keeper explicitly; keeper dev also wrote the
# soulctl config, so plain `soulctl …` works in your shell too.
export SOULCTL_KEEPER=$URL
SOULCTL_TOKEN=$(cat "$DIR/admin.token")
export SOULCTL_TOKEN
sed -n '/^Soul Stack dev keeper is up/,/^Next/p' "$DIR/dev.log" | sed '$d'

say "soulctl souls list"
soulctl souls list

say "soulctl incarnation create hello-dev --service hello --covens dev --watch"
soulctl incarnation create hello-dev --service hello --covens dev \
  --input '{"greeting": "Hello from the Soul Stack demo"}' --watch

say "soulctl incarnation history hello-dev"
soulctl incarnation history hello-dev

say "What the souls have now (each in its own root)"
for n in 1 2 3; do
  printf '%s: ' "$DIR/souls/$n/root/srv/hello/greeting.txt"
  cat "$DIR/souls/$n/root/srv/hello/greeting.txt"
done

say "soulctl incarnation show hello-dev — the committed state"
soulctl incarnation show hello-dev

elapsed=$(( $(date +%s) - started ))
case "$BIN" in /*) path=$BIN ;; *) path="\$PWD/$BIN" ;; esac
cat <<MSG

Done in ${elapsed}s. The keeper and its 3 souls keep running in the background
(pid $pid, log $DIR/dev.log). Try, from this directory (the tour: README.md, then docs/tour.md):

  export PATH="$path:\$PATH"    # soulctl is already configured for this keeper
  soulctl incarnation run hello-dev --scenario greet --input '{"greeting": "Good evening"}' --watch
  soulctl run list
  curl -s $URL/v1/incarnations/hello-dev -H "Authorization: Bearer \$(cat $DIR/admin.token)"

The web UI is at $URL/ui (log in with the token in $DIR/admin.token).
Stop everything with: make demo-stop
MSG
