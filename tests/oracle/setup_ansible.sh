#!/usr/bin/env bash
# Creates (once) a Python venv holding ansible-core 2.19 for the oracle tests.
# Idempotent and quiet: prints nothing when the venv is already usable.
# Usage: tests/oracle/setup_ansible.sh   (venv at ${KK_ORACLE_VENV:-target/oracle-venv},
# relative paths are taken from the repository root).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${KK_ORACLE_VENV:-target/oracle-venv}"
case "$venv" in
  /*) ;;
  *) venv="$root/$venv" ;;
esac
python="${PYTHON:-python3}"

ready() {
  [ -x "$venv/bin/ansible-playbook" ] &&
    "$venv/bin/python" -c 'import ansible, sys; sys.exit(0 if ansible.__version__.startswith("2.19.") else 1)' 2>/dev/null
}

if ready; then
  exit 0
fi

mkdir -p "$(dirname "$venv")"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" >/dev/null
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'ansible-core==2.19.*' >/dev/null

if ! ready; then
  echo "setup_ansible.sh: ansible-core 2.19 is not usable in $venv after installing it" >&2
  exit 1
fi
