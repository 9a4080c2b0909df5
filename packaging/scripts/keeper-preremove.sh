#!/bin/sh
# soulstack-keeper pre-remove: a removal (not an upgrade) stops the Keeper.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now soulstack-keeper.service || true
	fi
	;;
esac
exit 0
