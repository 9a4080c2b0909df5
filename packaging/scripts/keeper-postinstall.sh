#!/bin/sh
# soulstack-keeper post-install: the data directory; an initialized Keeper
# is (re)started, a new one is left for `keeper init` (which prints the
# first Archon's token, so it is the administrator's to run).
set -e
# /var/lib/soulstack is shared with the soul's package: created if missing
# (traversable, so the keeper's user reaches its own directory), and made
# traversable again if a soul package of before 0.x left it 0700.
[ -d /var/lib/soulstack ] || install -d -m 0755 /var/lib/soulstack
chmod a+x /var/lib/soulstack
install -d -o soulstack -g soulstack -m 0700 /var/lib/soulstack/keeper
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	if [ -e /var/lib/soulstack/keeper/tls ]; then
		systemctl enable soulstack-keeper.service || true
		systemctl restart soulstack-keeper.service || true
		exit 0
	fi
fi
if [ ! -e /var/lib/soulstack/keeper/tls ]; then
	echo "soulstack-keeper: initialize the Keeper once, then start it:" >&2
	echo "  sudo -u soulstack keeper init --config /etc/soulstack/keeper.yaml > admin.token" >&2
	echo "  systemctl enable --now soulstack-keeper" >&2
fi
exit 0
