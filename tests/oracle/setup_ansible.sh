#!/usr/bin/env bash
# Creates (once) a Python venv holding ansible-core 2.19 for the oracle tests, plus the
# ansible.posix and community.general collections (mount, authorized_key, sysctl,
# modprobe…) that ansible-core lacks, and
# passlib (ansible-core's password_hash filter needs it; bcrypt for its `blowfish` hashes,
# 4.0.1 being the last release passlib 1.7.4 works with), and jmespath (community.general's
# json_query filter needs it).
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

# The collections come from the `ansible` package on PyPI (galaxy is not reachable here):
# ansible 12.x is the release built on ansible-core 2.19. Only the collections listed in
# `collections` are unpacked from the 54 MB wheel (ansible.posix ~0.5 MB: mount,
# authorized_key, sysctl; community.general ~12 MB: modprobe…) into site-packages, where
# ansible-core finds collections on sys.path by itself. Pinned so every machine gets the
# same modules.
ansible_pkg='ansible==12.3.0'
collections='ansible/posix community/general community/crypto'

core_ready() {
  [ -x "$venv/bin/ansible-playbook" ] &&
    "$venv/bin/python" -c 'import ansible, sys; sys.exit(0 if ansible.__version__.startswith("2.19.") else 1)' 2>/dev/null &&
    "$venv/bin/python" -c 'import passlib, bcrypt, jmespath' 2>/dev/null
}

# Where collection $1 (`namespace/name`) lives in the venv.
collection_dir() {
  "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null |
    sed "s|\$|/ansible_collections/$1|"
}

# The collections not yet usable (MANIFEST.json is the last thing a finished unpack has).
missing_collections() {
  for c in $collections; do
    [ -f "$(collection_dir "$c")/MANIFEST.json" ] || printf '%s\n' "$c"
  done
}

ready() {
  core_ready && [ -z "$(missing_collections)" ]
}

if ready; then
  exit 0
fi

# Test binaries may call this at the same moment (the e2e modules run two at a time in a
# fresh clone): one makes the venv while the others wait, then find it ready.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if ready; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" >/dev/null
fi
if ! core_ready; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'ansible-core==2.19.*' 'passlib==1.7.4' 'bcrypt==4.0.1' 'jmespath==1.1.0' >/dev/null
fi

missing="$(missing_collections)"
if [ -n "$missing" ]; then
  collections_root="$(dirname "$(dirname "$(collection_dir ansible/posix)")")"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
    --dest "$tmp" "$ansible_pkg" >/dev/null
  # Unpack each next to the destination, then rename: a run cut short leaves no half
  # collection (the destination appears whole, MANIFEST.json included, or not at all).
  # shellcheck disable=SC2086
  "$venv/bin/python" - "$tmp" "$collections_root" $missing <<'PY'
import glob, os, shutil, sys, zipfile
tmp, root, names = sys.argv[1], sys.argv[2], sys.argv[3:]
(wheel,) = glob.glob(os.path.join(tmp, "ansible-*.whl"))
stage = os.path.join(tmp, "unpacked")
with zipfile.ZipFile(wheel) as z:
    for name in names:
        prefix = "ansible_collections/%s/" % name
        z.extractall(stage, [n for n in z.namelist() if n.startswith(prefix)])
        dest = os.path.join(root, name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.rmtree(dest, ignore_errors=True)
        staged = os.path.join(stage, prefix)
        # Same file system as dest (a sibling) so the final rename is atomic.
        sibling = dest + ".partial"
        shutil.rmtree(sibling, ignore_errors=True)
        shutil.move(staged, sibling)
        os.rename(sibling, dest)
PY
fi

if ! ready; then
  echo "setup_ansible.sh: ansible-core 2.19 or a collection ($collections) is not usable in $venv after installing them" >&2
  exit 1
fi
