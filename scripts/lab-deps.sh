#!/usr/bin/env bash
# Installs what internal/lab (the e2e test lab) needs on a Debian machine.
# Run as root. The lab itself also installs debootstrap when it is missing;
# this script lets a test command do it up front, once.
set -euo pipefail

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v ip >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null || need+=(util-linux)
command -v dpkg-deb >/dev/null || need+=(dpkg)
command -v apt-get >/dev/null || { echo "lab-deps: apt-get missing: the lab needs a Debian machine" >&2; exit 1; }

if ((${#need[@]})); then
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends "${need[@]}"; then
		# Stale or missing lists; an update may fail on a third-party source
		# and still refresh Debian's, so only the install decides.
		apt-get update -q || true
		apt-get install -y -q --no-install-recommends "${need[@]}"
	fi
fi
