#!/usr/bin/env python3
"""A stand-in for `kk run` that runs ansible-playbook with the kk_json callback.

Only for testing the oracle harness itself: `KK_BIN=tests/oracle/fake_kk.py
compare.py --all` must report every fixture as passing (modulo the fixtures'
declared `# kk-differs`, which then show up as not observed). Understands exactly
the command line compare.py gives kk:
  fake_kk.py run PLAYBOOK -i INVENTORY -e k=v ... --output json --workdir DIR [ARGS...]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def main(argv):
    if not argv or argv[0] != "run":
        print("fake_kk: only `run` is supported", file=sys.stderr)
        return 5
    args = list(argv[1:])
    out = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--output":
            i += 2
            continue
        if a == "--workdir":
            i += 2
            continue
        out.append(a)
        i += 1
    exe = compare.ansible_playbook_bin()
    if exe is None:
        print("fake_kk: ansible-playbook not found", file=sys.stderr)
        return 1
    env = dict(os.environ)
    env.update({
        "ANSIBLE_STDOUT_CALLBACK": "kk_json",
        "ANSIBLE_CALLBACK_PLUGINS": os.path.join(compare.HERE, "callback"),
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_PYTHON_INTERPRETER": os.path.join(os.path.dirname(exe), "python"),
    })
    os.execve(exe, [exe] + out, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
