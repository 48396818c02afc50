#!/usr/bin/env python3
"""Compares two event streams of the same playbook run (kk's `--output json`, and
ansible-playbook's through tests/oracle/callback/kk_json.py): the task each tool stopped at
and, per (task, host) in order of occurrence, the status. Prints the figures and the
differences; exits 1 when the statuses differ.

A task whose results sit on exactly one host in each run, a different one, is compared as
one result (its host printed): that is how `run_once` tasks inside include_role /
include_tasks show, and ansible-core picks their host by the order the includes' results
arrived (two runs of Ansible itself differ there), where kk picks the first host.

usage: compare_runs.py ANSIBLE.json KK.json [--show N]
"""
import json
import sys
from collections import defaultdict


def load(path):
    results = defaultdict(list)  # (task, host) -> [status, ...]
    order = []  # task names in order, consecutive repeats collapsed
    last_failed = None
    recap = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            ev = e.get("event")
            if ev == "task_start":
                name = e.get("task", "")
                if not order or order[-1] != name:
                    order.append(name)
            elif ev == "host_result":
                st = e.get("status")
                if e.get("ignored"):
                    st += " (ignored)"
                results[(e.get("task", ""), e.get("host", ""))].append(st)
                if e.get("status") == "failed" and not e.get("ignored"):
                    last_failed = (e.get("task"), e.get("host"), (e.get("result") or {}).get("msg"))
            elif ev == "recap":
                recap = e.get("hosts")
    return results, order, last_failed, recap


def single_host_moves(a_res, k_res):
    """Re-keys the tasks that ran on one host in each run, not the same one, to one key;
    returns their (task, ansible's host, kk's host)."""
    def hosts(res):
        by_task = defaultdict(set)
        for task, host in res:
            by_task[task].add(host)
        return by_task
    a_hosts, k_hosts = hosts(a_res), hosts(k_res)
    moved = []
    for task in sorted(a_hosts.keys() & k_hosts.keys()):
        (ha,), (hk,) = (a_hosts[task], k_hosts[task]) if len(a_hosts[task]) == len(k_hosts[task]) == 1 else ((None,), (None,))
        if ha is None or ha == hk:
            continue
        key = (task, f"{ha}|{hk}")
        a_res[key] = a_res.pop((task, ha))
        k_res[key] = k_res.pop((task, hk))
        moved.append((task, ha, hk))
    return moved


def main():
    args = sys.argv[1:]
    show = 40
    if "--show" in args:
        i = args.index("--show")
        show = int(args[i + 1])
        del args[i : i + 2]
    a_res, a_order, a_fail, a_recap = load(args[0])
    k_res, k_order, k_fail, k_recap = load(args[1])
    moved = single_host_moves(a_res, k_res)
    keys = sorted(set(a_res) | set(k_res))
    same = 0
    diffs = []
    for key in keys:
        a, k = a_res.get(key, []), k_res.get(key, [])
        n = max(len(a), len(k))
        for i in range(n):
            sa = a[i] if i < len(a) else "-"
            sk = k[i] if i < len(k) else "-"
            if sa == sk:
                same += 1
            else:
                diffs.append((key, i, sa, sk))
    total = same + len(diffs)
    print(f"host x task results: {total}, same status: {same} ({100.0 * same / max(total, 1):.1f} %), different: {len(diffs)}")
    print(f"tasks started: ansible {len(a_order)}, kk {len(k_order)}")
    print(f"ansible stopped at: {a_fail}")
    print(f"kk stopped at:      {k_fail}")
    print(f"tasks on one host, another in each run (run_once in an include): {len(moved)}")
    for h in sorted((a_recap or {}).keys() | (k_recap or {}).keys()):
        print(f"recap {h}: ansible {(a_recap or {}).get(h)}")
        print(f"recap {h}: kk      {(k_recap or {}).get(h)}")
    # Differences in the order ansible ran the tasks.
    pos = {t: i for i, t in enumerate(a_order)}
    diffs.sort(key=lambda d: (pos.get(d[0][0], 1 << 30), d[0][1], d[1]))
    for (task, host), i, sa, sk in diffs[:show]:
        print(f"  {task} @ {host} [{i}]: ansible {sa}, kk {sk}")
    if len(diffs) > show:
        print(f"  … {len(diffs) - show} more")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
