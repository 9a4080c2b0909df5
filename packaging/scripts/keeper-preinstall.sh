#!/bin/sh
# soulstack-keeper pre-install: the system user the Keeper runs as.
set -e
if ! getent group soulstack >/dev/null 2>&1; then
	groupadd --system soulstack
fi
if ! getent passwd soulstack >/dev/null 2>&1; then
	nologin=$(command -v nologin || echo /usr/sbin/nologin)
	useradd --system --gid soulstack --home-dir /var/lib/soulstack --no-create-home --shell "$nologin" --comment "Soul Stack Keeper" soulstack
fi
exit 0
