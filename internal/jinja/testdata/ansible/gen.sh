#!/bin/sh
# gen.sh renders every templates/*.j2 (but the ones only included or
# extended: macros, partial and templates/layout/) with
# real Ansible's template module and vars.yml, into want/. The Go tests
# compare internal/jinja's rendering with want/ byte for byte. Rerun it
# with ansible-core installed (checked with 2.14) after adding a case.
set -eu
cd "$(dirname "$0")"
rm -rf want && mkdir want
cat > /tmp/jinja-golden.yml <<YML
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files: [$(pwd)/vars.yml]
  tasks:
    - ansible.builtin.template:
        src: "$(pwd)/templates/{{ item }}.j2"
        dest: "$(pwd)/want/{{ item }}.out"
        newline_sequence: "{{ '\\\\r\\\\n' if item == 'newline_crlf' else '\\\\n' }}"
      loop: [$(ls templates | sed -n 's/\.j2$//p' | grep -v -x -e macros -e partial | paste -sd, -)]
YML
ansible-playbook /tmp/jinja-golden.yml
rm -f /tmp/jinja-golden.yml
