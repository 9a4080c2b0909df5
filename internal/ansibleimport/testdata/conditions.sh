#!/usr/bin/env bash
# Writes conditions.json: for each Jinja condition of expr_test.go's
# conditionCases, whether real Ansible (apt-get install ansible-core) runs a
# task with that when: on the case host (Debian 12 amd64 facts, the case
# variables, a registered `result`). Run: bash testdata/conditions.sh
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/library"
cat > "$work/library/case_facts.py" <<'PY'
#!/usr/bin/python3
from ansible.module_utils.basic import AnsibleModule
m = AnsibleModule(argument_spec=dict(facts=dict(type='dict', required=True)))
m.exit_json(changed=False, ansible_facts=dict(('ansible_' + k, v) for k, v in m.params['facts'].items()))
PY
python3 - ../expr_test.go "$work/play.yml" <<'PY'
import json, re, sys, yaml
src = open(sys.argv[1]).read()
table = src[src.index("var conditionCases"):]
table = table[:table.index("\n}\n")]
exprs = re.findall(r"^\t\{`([^`]*)`", table, re.M)
tasks = [{"name": "facts", "case_facts": {"facts": {
    "os_family": "Debian", "distribution": "Debian", "distribution_release": "bookworm",
    "distribution_major_version": "12", "distribution_version": "12.8", "architecture": "x86_64",
    "service_mgr": "systemd", "processor_vcpus": 2, "hostname": "web-1"}}}]
for i, e in enumerate(exprs):
    tasks.append({"name": "case %d" % i, "debug": {"msg": e}, "when": e})
play = [{"hosts": "localhost", "connection": "local", "gather_facts": False,
  "vars": {"nginx_enabled": True, "nginx_port": 8080, "nginx_user": "www-data", "flag_yes": "yes", "flag_off": "off",
           "users": ["alice", "bob"], "limits": {"nofile": 1024}, "empty": "", "version": "1.24.0", "conf_path": "/etc/redis/redis.conf",
           "result": {"rc": 0, "changed": True, "failed": False, "stdout": "all ok"}},
  "tasks": tasks}]
yaml.safe_dump(play, open(sys.argv[2], "w"), sort_keys=False)
json.dump(exprs, open(sys.argv[2] + ".exprs", "w"))
PY
ANSIBLE_LIBRARY="$work/library" ANSIBLE_STDOUT_CALLBACK=json ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 \
  ansible-playbook -i localhost, "$work/play.yml" > "$work/out.json" || { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d, indent=1)[:3000])" "$work/out.json"; exit 1; }
python3 - "$work/out.json" "$work/play.yml.exprs" > conditions.json <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
exprs = json.load(open(sys.argv[2]))
res = {}
for t in out["plays"][0]["tasks"]:
    name = t["task"]["name"]
    if not name.startswith("case "):
        continue
    h = t["hosts"]["localhost"]
    if h.get("failed"):
        sys.exit("%s failed in Ansible: %s" % (exprs[int(name[5:])], h.get("msg")))
    res[exprs[int(name[5:])]] = not h.get("skipped", False)
print(json.dumps(res, indent=1, sort_keys=True))
PY
echo "wrote testdata/conditions.json: $(grep -c ':' conditions.json) conditions"
