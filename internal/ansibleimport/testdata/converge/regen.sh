#!/usr/bin/env bash
# Writes converge/motd/: what real Ansible (apt-get install ansible-core)
# leaves in motd_dir when it applies examples/ansible/motd with its defaults
# on this machine (a Debian host), motd_dir pointed into a temp dir. The
# importer's converge test compares the imported destiny's files with it.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/play.yml" <<PLAY
- hosts: localhost
  connection: local
  gather_facts: true
  roles:
    - role: $PWD/../../../../examples/ansible/motd
      motd_dir: $work/motd.d
PLAY
ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 ansible-playbook -i localhost, "$work/play.yml" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
rm -rf motd && mkdir motd && cp -a "$work/motd.d/." motd/
# git keeps no modes but 644/755: the modes Ansible set are written down.
(cd "$work/motd.d" && stat -c '%n %a' .[!.]* * | sort) > motd.modes
cat motd.modes
