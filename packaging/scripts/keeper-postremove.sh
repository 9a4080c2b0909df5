#!/bin/sh
# soulstack-keeper post-remove: purge removes the Keeper's data directory
# (its SQLite database and TLS material); the system user stays, as files
# it owned may remain elsewhere.
set -e
case "$1" in
purge)
	rm -rf /var/lib/soulstack/keeper
	rm -f /etc/soulstack/keeper.yaml
	rmdir /var/lib/soulstack /etc/soulstack 2>/dev/null || true
	;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
