#!/usr/bin/env python3
"""Inventory script with _meta: groups with hosts, vars and children."""
import json
import sys

if sys.argv[1:] == ["--list"]:
    print(json.dumps({
        "all": {"vars": {"ansible_connection": "local", "from_all": "script_all"}},
        "cluster": {"children": ["web", "db"], "vars": {"cluster_var": 1, "shared": "cluster"}},
        "web": {"hosts": ["h1", "h2"], "vars": {"shared": "web", "web_list": [1, "two", None]}},
        "db": {"hosts": ["h3"], "vars": {"db_map": {"a": {"b": True}}}},
        "ungrouped": {"hosts": ["loner"]},
        "_meta": {"hostvars": {
            "h1": {"out_dir": "{{ oracle_root }}/h1", "hv": "one", "shared": "host"},
            "h2": {"out_dir": "{{ oracle_root }}/h2", "hv": 2},
            "h3": {"out_dir": "{{ oracle_root }}/h3", "hv": [3]},
            "nowhere": {"hv": "ignored: in no group"},
        }},
    }))
elif sys.argv[1:2] == ["--host"]:
    print("{}")
else:
    sys.exit("usage: inv.py --list | --host NAME")
