#!/usr/bin/env bash
# Creates (once) a Python venv holding ansible-core 2.19 for the oracle tests, plus the
# ansible.posix collection (mount, authorized_key, sysctl…) that ansible-core lacks, and
# passlib (ansible-core's password_hash filter needs it).
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

# The collection comes from the `ansible` package on PyPI (galaxy is not reachable here):
# ansible 12.x is the release built on ansible-core 2.19. Only its ansible_collections/ansible/posix
# is unpacked (~0.5 MB of the 54 MB wheel) into site-packages, where ansible-core finds
# collections on sys.path by itself. Pinned so every machine gets the same modules.
ansible_pkg='ansible==12.3.0'

core_ready() {
  [ -x "$venv/bin/ansible-playbook" ] &&
    "$venv/bin/python" -c 'import ansible, sys; sys.exit(0 if ansible.__version__.startswith("2.19.") else 1)' 2>/dev/null &&
    "$venv/bin/python" -c 'import passlib' 2>/dev/null
}

posix_dir() {
  "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null |
    sed 's|$|/ansible_collections/ansible/posix|'
}

posix_ready() {
  [ -f "$(posix_dir)/MANIFEST.json" ]
}

ready() {
  core_ready && posix_ready
}

if ready; then
  exit 0
fi

mkdir -p "$(dirname "$venv")"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" >/dev/null
fi
if ! core_ready; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'ansible-core==2.19.*' 'passlib==1.7.4' >/dev/null
fi

if ! posix_ready; then
  dest="$(posix_dir)"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
    --dest "$tmp" "$ansible_pkg" >/dev/null
  # Unpack next to the destination, then rename: a run cut short leaves no half collection.
  "$venv/bin/python" - "$tmp" "$dest" <<'PY'
import glob, os, shutil, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
prefix = "ansible_collections/ansible/posix/"
(wheel,) = glob.glob(os.path.join(tmp, "ansible-*.whl"))
stage = os.path.join(tmp, "unpacked")
with zipfile.ZipFile(wheel) as z:
    z.extractall(stage, [n for n in z.namelist() if n.startswith(prefix)])
os.makedirs(os.path.dirname(dest), exist_ok=True)
shutil.rmtree(dest, ignore_errors=True)
shutil.move(os.path.join(stage, prefix), dest)
PY
fi

if ! ready; then
  echo "setup_ansible.sh: ansible-core 2.19 or the ansible.posix collection is not usable in $venv after installing them" >&2
  exit 1
fi
