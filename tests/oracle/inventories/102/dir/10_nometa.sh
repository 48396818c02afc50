#!/bin/sh
# No _meta: Ansible asks --host for each host.
case "$1" in
  --list)
    echo '{"late": {"hosts": ["h2", "h3"], "vars": {"late_var": "late"}, "children": ["spares"]},'
    echo ' "spares": ["spare1", "spare2"]}'
    ;;
  --host)
    case "$2" in
      h2) echo '{"per_host": "asked for h2"}' ;;
      spare1) echo '{"per_host": "asked for spare1", "ansible_port": 2201}' ;;
      *) echo '' ;;
    esac
    ;;
  *) exit 2 ;;
esac
