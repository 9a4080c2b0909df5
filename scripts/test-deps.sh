#!/usr/bin/env bash
# Installs and starts what the test suite needs on a Debian machine:
# PostgreSQL (started, with a soulstack test role), debootstrap and friends
# for the lab, Chromium for the UI tests. Idempotent; needs root (or sudo)
# to install, and does nothing that is already done.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

need=()
command -v pg_ctlcluster >/dev/null 2>&1 || need+=(postgresql)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v dpkg-scanpackages >/dev/null 2>&1 || need+=(dpkg-dev)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v git >/dev/null 2>&1 || need+=(git)
# install14: install.sh is run with curl; the .rpm is inspected with rpm;
# the scripts are checked with shellcheck.
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v rpm >/dev/null 2>&1 || need+=(rpm)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
# install14: soulctl souls bootstrap is tested against a real sshd.
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
# i32: the .debs are checked with lintian as a Debian user would.
command -v lintian >/dev/null 2>&1 || need+=(lintian)
# i32: the .rpms are checked with rpmlint, whose binary check needs
# python3-magic (a dependency a partial install can lack: without it every
# package is "no-binary").
command -v rpmlint >/dev/null 2>&1 || need+=(rpmlint)
/usr/bin/python3 -c 'import magic' >/dev/null 2>&1 || need+=(python3-magic)
command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
# i32: the docs site is built with mkdocs (make docs).
command -v mkdocs >/dev/null 2>&1 || need+=(mkdocs)
if [ ${#need[@]} -gt 0 ]; then
  echo "test-deps: installing ${need[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

# PostgreSQL: start the local cluster and make a superuser role for tests.
ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1 || true)
if [ -n "$ver" ]; then
  $SUDO pg_ctlcluster "$ver" main start 2>/dev/null || true
  for _ in $(seq 1 30); do
    if $SUDO -u postgres psql -qAtc 'select 1' >/dev/null 2>&1 || su postgres -c "psql -qAtc 'select 1'" >/dev/null 2>&1; then break; fi
    sleep 0.5
  done
  su postgres -c "psql -qAtc \"select 1 from pg_roles where rolname='soulstack'\"" | grep -q 1 ||
    su postgres -c "psql -qc \"create role soulstack login superuser password 'soulstack'\"" >/dev/null
fi

# i32: the OpenAPI document is linted with @redocly/cli (internal/api's
# redocly_test.go), this version exactly, installed with npm into a cache
# directory the tests own (the test finds it there, or at $SOULSTACK_REDOCLY).
REDOCLY_VERSION=2.77.0
redocly_dir="${XDG_CACHE_HOME:-$HOME/.cache}/soulstack-test/redocly-$REDOCLY_VERSION"
if [ ! -x "$redocly_dir/node_modules/.bin/redocly" ]; then
  command -v npm >/dev/null 2>&1 || { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm >/dev/null; }
  echo "test-deps: installing @redocly/cli@$REDOCLY_VERSION into $redocly_dir"
  mkdir -p "$redocly_dir"
  npm install --silent --no-audit --no-fund --prefix "$redocly_dir" "@redocly/cli@$REDOCLY_VERSION" >/dev/null
fi
