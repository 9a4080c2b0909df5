#!/bin/sh
# soulstack-soul post-install (deb postinst, rpm %post). Never starts a soul
# that has no Keeper configured; restarts a running soul after an upgrade
# (KillMode=process: an apt that a task started survives it).
set -e
# /var/lib/soulstack is shared with the keeper's package on its host (whose
# user reads /var/lib/soulstack/keeper through it): created if missing,
# never re-moded. The soul owns its own subdirectory only.
[ -d /var/lib/soulstack ] || install -d -m 0755 /var/lib/soulstack
install -d -m 0700 /var/lib/soulstack/soul
env=/etc/soulstack/soul.env
keeper=$(sed -n 's/^SOULSTACK_KEEPER=//p' "$env" 2>/dev/null | tail -n 1 | tr -d "\"' ")
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	if [ -n "$keeper" ]; then
		systemctl enable soulstack-soul.service || true
		if systemctl is-active --quiet soulstack-soul.service; then
			systemctl restart soulstack-soul.service || true
		else
			systemctl start soulstack-soul.service || true
		fi
	else
		echo "soulstack-soul: no Keeper configured, the soul is not started: set SOULSTACK_KEEPER (and SOUL_JOIN_TOKEN) in $env, then run: systemctl enable --now soulstack-soul" >&2
	fi
fi
exit 0
