#!/usr/bin/env bash
# Regenerates the golden renders of real Ansible roles' templates with real
# Ansible (apt-get install ansible-core; made with ansible-core 2.14 on
# Debian 12). For each <role>/cases/<case>.yml it writes
#   <role>/golden/<case>/vars.json   the case's variables, merged as Ansible
#                                    merges them (later files and the case's
#                                    own vars replace earlier top-level keys)
#   <role>/golden/<case>/<template>  what Ansible's template module wrote,
#                                    named as the template without .j2
# internal/jinja's golden test renders the same templates with the same
# variables through core.file.rendered and compares byte for byte.
# Run from anywhere: bash internal/jinja/testdata/roles/regen.sh
set -euo pipefail
cd "$(dirname "$0")"
command -v ansible-playbook >/dev/null || { echo "needs ansible-playbook: apt-get install ansible-core" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for casefile in */cases/*.yml; do
  role=${casefile%%/*}
  case=$(basename "$casefile" .yml)
  out="$role/golden/$case"
  rm -rf "$out" && mkdir -p "$out"
  python3 - "$casefile" "$role" "$out/vars.json" <<'PY'
import json, sys, yaml
casefile, role, dest = sys.argv[1:]
case = yaml.safe_load(open(casefile))
merged = {}
for f in case.get("vars_files", []):
    merged.update(yaml.safe_load(open(f"{role}/vars/{f}")) or {})
merged.update(case.get("vars") or {})
json.dump(merged, open(dest, "w"), indent=1, sort_keys=True)
open(dest, "a").write("\n")
PY
  python3 - "$casefile" > "$work/templates.json" <<'PY'
import json, sys, yaml
print(json.dumps(yaml.safe_load(open(sys.argv[1]))["templates"]))
PY
  cat > "$work/play.yml" <<PLAY
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files: ["$PWD/$out/vars.json"]
  tasks:
    - name: render
      ansible.builtin.template:
        src: "$PWD/$role/templates/{{ tpl }}"
        dest: "$PWD/$out/{{ tpl | regex_replace('\\\\.j2\$', '') | replace('/', '__') }}"
        mode: "0644"
      loop: "{{ lookup('file', '$work/templates.json') | from_json }}"
      loop_control: {loop_var: tpl}
PLAY
  ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 \
    ansible-playbook -i localhost, "$work/play.yml" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
  echo "$out: $(ls "$out" | wc -l) files"
done
