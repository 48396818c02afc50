#!/usr/bin/env bash
# Runs kubespray's cluster.yml on three fresh test-bed hosts, under kk or under ansible-core,
# and writes the run's event stream (kk's JSON events; Ansible's through
# tests/oracle/callback/kk_json.py) for tests/kubespray/compare_runs.py. Not part of the
# suite: the oracle fixtures 260-265 pin each behaviour kubespray needed.
#
#   tests/kubespray/run.sh kk|ansible check|stages|downloads OUT.json
#
#   check      cluster.yml --check
#   stages     cluster.yml --tags bootstrap_os,preinstall,facts (real mode) without the
#              system-packages tag (the hosts reach no Debian mirror here)
#   downloads  the same and the download tag (real mode) against a local mirror of
#              kubespray's file URLs (mirror-plan.yml lists them, mirror.py builds it,
#              an HTTP server on the controller serves it), and kubespray's container
#              images pulled from a local registry: container_manager is docker (Debian
#              bookworm's docker.io, installed on the hosts here from the controller's
#              copies of the packages, with the registry as an insecure registry; kubespray
#              does not install it, its container-engine tag is not run), the registry is
#              Debian's docker-registry on the controller's side of the bridge (plain
#              HTTP), images.py pushes a stand-in image for each image mirror-plan.yml
#              lists, and kubespray's *_image_repo variables point at it (kube_image_repo:
#              REGISTRY/registry.k8s.io, and so on)
#
# KK_TARGET_DIR: where the release kk and testbed-up (and the debug kube-fake) are built
# (default: the repository's target/).
# KUBESPRAY_DIR: a kubespray v2.31.0 tree (default /var/tmp/kubespray-v2.31.0; it is
# `git archive v2.31.0` of kubernetes-sigs/kubespray, kept outside this repository).
# The controller's ansible (for ansible-playbook, and for kk's modules written in Python
# such as kubespray's library/kube.py) is ansible==11.13.0, the release kubespray v2.31
# pins (ansible-core 2.18), in /var/tmp/kk-kubespray-venv (made here once from PyPI).
# kk runs with ANSIBLE_ALLOW_BROKEN_CONDITIONALS=true (kubespray v2.31 is written for
# ansible-core 2.18, whose conditions may give non-booleans; kk follows 2.19) and
# --skip-tags check (its version check wants ansible-core < 2.19). The real-mode runs set
# enable_nodelocaldns=false: its "Check dummy module" loads a kernel module, and the kernel
# of this machine's test hosts has no module support (no /proc/modules).
set -euo pipefail
tool=${1:?kk or ansible} mode=${2:?check or stages} out=${3:?OUT.json}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target=${KK_TARGET_DIR:-$root/target}
ks=${KUBESPRAY_DIR:-/var/tmp/kubespray-v2.31.0}
venv=${KK_KUBESPRAY_VENV:-/var/tmp/kk-kubespray-venv}
[ -f "$ks/cluster.yml" ] || { echo "no kubespray at $ks (set KUBESPRAY_DIR)" >&2; exit 1; }
if [ ! -x "$venv/bin/ansible-playbook" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check ansible==11.13.0 jmespath==1.1.0 netaddr==1.3.0
fi
out=$(realpath -m "$out")
work=$(mktemp -d)
trap 'exec 9>&-; wait; rm -rf "$work"' EXIT
# Three fresh hosts, up while fd 9 stays open.
mkfifo "$work/up"
"$target/release/testbed-up" 3 "$work/bed.yaml" <"$work/up" >"$work/up.log" 2>&1 &
exec 9>"$work/up"
for _ in $(seq 120); do grep -q '^up;' "$work/up.log" 2>/dev/null && break; sleep 1; done
grep -q '^up;' "$work/up.log" || { cat "$work/up.log" >&2; exit 1; }
key=$(grep -o '\-i [^ ]*' "$work/up.log" | head -1 | cut -d' ' -f2)
mapfile -t ips < <(grep -o 'root@[0-9.]*' "$work/up.log" | cut -d@ -f2)
net=${ips[0]%.*}
mkdir -p "$work/inv"
cp -r "$ks/inventory/sample/group_vars" "$work/inv/"
cat >"$work/inv/inventory.ini" <<INV
[all:vars]
ansible_user=root
ansible_ssh_private_key_file=$key
ansible_ssh_common_args=-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
ansible_python_interpreter=/usr/bin/python3

[kube_control_plane]
node1 ansible_host=${ips[0]} ip=${ips[0]} etcd_member_name=etcd1

[etcd:children]
kube_control_plane

[kube_node]
node2 ansible_host=${ips[1]} ip=${ips[1]}
node3 ansible_host=${ips[2]} ip=${ips[2]}
INV
# kubespray's preinstall refuses a host without a nameserver.
for ip in "${ips[@]}"; do
  ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -i "$key" "root@$ip" \
    "echo 'nameserver $net.1' > /etc/resolv.conf"
done
# kubespray pings the hosts (iputils-ping), which its system-packages step would install
# from a mirror the hosts cannot reach here: the controller's copies of the packages are
# installed instead.
debs=${KK_KUBESPRAY_DEBS:-/var/tmp/kk-kubespray-debs}
if ! ls "$debs"/iputils-ping_*.deb >/dev/null 2>&1; then
  mkdir -p "$debs"
  (cd "$debs" && apt-get download -qq iputils-ping libcap2-bin 2>/dev/null)
fi
for ip in "${ips[@]}"; do
  tar -C "$debs" -c . | ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
    -i "$key" "root@$ip" 'd=$(mktemp -d) && tar -C "$d" -x && dpkg -i "$d"/*.deb >/dev/null && rm -rf "$d"'
done
# kubespray's ansible.cfg caches facts in /tmp for a day (jsonfile, keyed by host name):
# each Ansible run gets its own empty cache, so it gathers what kk gathers.
export ANSIBLE_CACHE_PLUGIN_CONNECTION="$work/fact-cache"
args=(cluster.yml -i "$work/inv/inventory.ini")
case "$mode" in
  check) args+=(--check) ;;
  stages) args+=(--tags bootstrap_os,preinstall,facts --skip-tags system-packages -e "{\"enable_nodelocaldns\": false}") ;;
  downloads)
    # The mirror: kubespray's base URLs point at an HTTP server on the controller's side
    # of the test-bed bridge; the files and their checksums come from mirror.py.
    port=$((20000 + $$ % 10000))
    base="http://$net.1:$port"
    # The registry: Debian's docker-registry on the same address, plain HTTP; each of
    # kubespray's image registries is a path under it.
    reg="$net.1:$((port + 10000))"
    printf '%s\n' "github_url: $base/github.com" "dl_k8s_io_url: $base/dl.k8s.io" \
      "storage_googleapis_url: $base/storage.googleapis.com" "get_helm_url: $base/get.helm.sh" \
      "container_manager: docker" "kube_image_repo: $reg/registry.k8s.io" "gcr_image_repo: $reg/gcr.io" \
      "docker_image_repo: $reg/docker.io" "quay_image_repo: $reg/quay.io" \
      "github_image_repo: $reg/ghcr.io" >"$work/mirror-base.yml"
    printf '%s\n' "version: 0.1" "log: {level: warn, accesslog: {disabled: true}}" \
      "storage: {filesystem: {rootdirectory: $work/registry}}" "http: {addr: '$reg'}" >"$work/registry.yml"
    # Docker on the hosts: bookworm's docker.io and what it needs beyond the test hosts'
    # packages, from the controller's copies; the registry is an insecure (HTTP) one.
    ddebs=${KK_KUBESPRAY_DOCKER_DEBS:-/var/tmp/kk-kubespray-docker-debs}
    if ! ls "$ddebs"/docker.io_*.deb >/dev/null 2>&1; then
      mkdir -p "$ddebs"
      (cd "$ddebs" && apt-get download -qq docker.io containerd runc tini 2>/dev/null)
    fi
    pids=()
    for ip in "${ips[@]}"; do
      tar -C "$ddebs" -c . | ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
        -i "$key" "root@$ip" "mkdir -p /etc/docker && printf '{\"insecure-registries\": [\"$reg\"]}\n' >/etc/docker/daemon.json &&
          d=\$(mktemp -d) && tar -C \"\$d\" -x && DEBIAN_FRONTEND=noninteractive dpkg -i \"\$d\"/*.deb >/dev/null &&
          rm -rf \"\$d\" && systemctl is-active -q docker" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || { echo "installing docker on the hosts failed" >&2; exit 1; }; done
    fake=${KK_FAKE_BIN:-$target/debug/kube-fake}
    [ -x "$fake" ] || (cd "$root" && CARGO_TARGET_DIR="$target" cargo build -q -p kk-fakes --bin kube-fake)
    (cd "$ks" && ANSIBLE_CACHE_PLUGIN=memory "$venv/bin/ansible-playbook" -i "$work/inv/inventory.ini" -e "{\"enable_nodelocaldns\": false}" \
      -e @"$work/mirror-base.yml" -e mirror_plan="$work/mirror-plan.tsv" -e mirror_images="$work/mirror-images.tsv" \
      "$here/mirror-plan.yml" >"$work/mirror-plan.log" 2>&1) || { cat "$work/mirror-plan.log" >&2; exit 1; }
    python3 "$here/mirror.py" "$work/mirror-plan.tsv" "$ks" "$fake" "$work/mirror" "$work/mirror-sums.yml" >&2
    python3 -m http.server --bind "$net.1" --directory "$work/mirror" "$port" >"$work/mirror.log" 2>&1 &
    server=$!
    docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
    registry=$!
    trap 'kill $server $registry 2>/dev/null; exec 9>&-; wait; rm -rf "$work"' EXIT
    for _ in $(seq 50); do curl -fso /dev/null "http://$reg/v2/" && break; sleep 0.2; done
    python3 "$here/images.py" "$work/mirror-images.tsv" "$reg" >&2
    args+=(--tags bootstrap_os,preinstall,facts,download --skip-tags system-packages -e "{\"enable_nodelocaldns\": false}"
      -e @"$work/mirror-base.yml" -e @"$work/mirror-sums.yml") ;;
  *) echo "mode: check, stages or downloads" >&2; exit 5 ;;
esac
cd "$ks"
start=$(date +%s.%N)
case "$tool" in
  ansible)
    ANSIBLE_CALLBACK_PLUGINS="$root/tests/oracle/callback" ANSIBLE_STDOUT_CALLBACK=kk_json \
      ANSIBLE_CALLBACKS_ENABLED= "$venv/bin/ansible-playbook" "${args[@]}" >"$out" 2>"$out.err" || true ;;
  kk)
    # With --skip-tags check as well: kk's version check answer is 2.19.
    skip=check
    if [ "$mode" != check ]; then
      # Its --skip-tags joins kk's own below.
      skip=check,system-packages
      kept=()
      for ((i = 0; i < ${#args[@]}; i++)); do
        if [ "${args[i]}" = --skip-tags ]; then i=$((i + 1)); else kept+=("${args[i]}"); fi
      done
      args=("${kept[@]}")
    fi
    ANSIBLE_ALLOW_BROKEN_CONDITIONALS=true KK_ANSIBLE_PYTHON="$venv/bin/python" \
      "${KK:-$target/release/kk}" run "${args[@]}" --skip-tags "$skip" --workdir "$work/kk" -o json >"$out" 2>"$out.err" || true ;;
  *) echo "tool: kk or ansible" >&2; exit 5 ;;
esac
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v t="$tool" -v m="$mode" 'BEGIN {printf "%s %s: %.1f s\n", t, m, e - s}' | tee "$out.time"
