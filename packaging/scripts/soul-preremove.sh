#!/bin/sh
# soulstack-soul pre-remove (deb prerm, rpm %preun): a removal (not an
# upgrade) stops and disables the soul.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now soulstack-soul.service || true
	fi
	;;
esac
exit 0
