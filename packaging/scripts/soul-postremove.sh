#!/bin/sh
# soulstack-soul post-remove (deb postrm, rpm %postun): purge removes the
# soul's key, pinned Keeper and task log; a plain remove keeps them.
set -e
case "$1" in
purge)
	rm -rf /var/lib/soulstack/soul
	rm -f /etc/soulstack/soul.env
	rmdir /var/lib/soulstack /etc/soulstack 2>/dev/null || true
	;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
