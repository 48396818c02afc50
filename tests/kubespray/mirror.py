#!/usr/bin/env python3
"""Builds a local mirror of the files kubespray's download role fetches.

    mirror.py PLAN KUBESPRAY_DIR KUBE_FAKE MIRROR_DIR VARS_OUT

PLAN is what mirror-plan.yml wrote: one `name<TAB>url<TAB>unarchive` line per enabled file
download, its URL already pointing at the mirror (run.sh sets github_url, dl_k8s_io_url,
storage_googleapis_url and get_helm_url to it). Each file is written under MIRROR_DIR at
its URL's path, so a plain HTTP server over MIRROR_DIR answers kubespray's URLs.

What the files hold: no registry here carries kubespray's release binaries, so
- kubeadm, kubelet, kubectl and calicoctl are kk's test FAKES (tests/fakes, one multi-call
  binary named by argv[0]) with the version trailer taken from the URL;
- every other binary is a STAND-IN shell script that says what it stands in for and exits 1;
- archives (.tar.gz, .tgz, .tar.xz) hold those under the names kubespray unpacks them to.

kubespray checks every download against its pinned sha256 (checksums.yml), which these
files cannot match: VARS_OUT gets the download's checksum variable (the one its
`downloads.<name>.checksum` names in kubespray's defaults) set to the sha256 of the file
served, as an extra-vars file both tools are given. Output is deterministic (sorted names,
fixed archive times).
"""
import hashlib
import io
import os
import re
import sys
import tarfile
import urllib.parse

STAND_IN = """#!/bin/sh
# STAND-IN for {name} ({url}): served by kk's kubespray download mirror
# (tests/kubespray/mirror.py). Not the real binary; it only exists to be downloaded.
echo "STAND-IN {name}: not the real binary" >&2
exit 1
"""

FAKED = {"kubeadm", "kubelet", "kubectl", "calicoctl"}


def checksum_vars(kubespray):
    """downloads.<name> -> (the variable its `checksum:` names, whether that is a
    `no_arch` table of versions); etcd's checksum is an expression over etcd_binary_checksum."""
    text = open(os.path.join(kubespray, "roles/kubespray_defaults/defaults/main/download.yml")).read()
    out, name = {}, None
    for line in text.split("downloads:", 1)[1].splitlines():
        m = re.match(r"^  ([a-z0-9_]+):\s*$", line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r'^    checksum: "\{\{ ([a-z0-9_]+)( \}\}|\.no_arch\[)', line)
        if m and name:
            # A plain variable, or a table of versions without architecture.
            out[name] = (m.group(1), m.group(2) != " }}")
    out.setdefault("etcd", ("etcd_binary_checksum", False))
    return out


def version_in(url):
    m = re.search(r"/v?(\d+\.\d+\.\d+)", urllib.parse.urlparse(url).path)
    return "v" + m.group(1) if m else "v0.0.0"


def binary(name, url, fake):
    tool = os.path.basename(urllib.parse.urlparse(url).path).split("-")[0].split(".")[0]
    if name in FAKED or tool in FAKED:
        return fake + ("\nKK-FAKE-VERSION=%s\n" % version_in(url)).encode()
    return STAND_IN.format(name=name, url=url).encode()


def members(name, url):
    """The paths inside an archive of download `name`, as kubespray unpacks them."""
    base = os.path.basename(urllib.parse.urlparse(url).path)
    if name == "etcd":
        top = re.sub(r"\.tar\.gz$", "", base)
        return [f"{top}/etcd", f"{top}/etcdctl", f"{top}/etcdutl"]
    if name == "cni":
        return ["./bridge", "./host-local", "./loopback", "./portmap"]
    if name == "containerd":
        return ["bin/containerd", "bin/containerd-shim-runc-v2", "bin/ctr"]
    if name == "helm":
        return ["linux-amd64/helm"]
    if name == "nerdctl":
        return ["nerdctl"]
    if name == "crictl":
        return ["crictl"]
    if name == "cri_dockerd":
        return ["cri-dockerd/cri-dockerd"]
    return [name]


def archive(name, url, fake, mode):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:" + mode) as tar:
        for path in members(name, url):
            data = binary(os.path.basename(path), url, fake)
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o755, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def main():
    plan, kubespray, fake_path, mirror, vars_out = sys.argv[1:6]
    fake = open(fake_path, "rb").read()
    sums = checksum_vars(kubespray)
    lines = []
    for row in sorted(l.split("\t") for l in open(plan).read().splitlines() if l.strip()):
        name, url = row[0].strip(), row[1].strip()
        path = urllib.parse.urlparse(url).path
        if path.endswith((".tar.gz", ".tgz")):
            data = archive(name, url, fake, "gz")
        elif path.endswith(".tar.xz"):
            data = archive(name, url, fake, "xz")
        else:
            data = binary(name, url, fake)
        dest = os.path.join(mirror, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(data)
        if name not in sums:
            sys.exit(f"mirror.py: no checksum variable known for download {name!r}")
        var, table = sums[name]
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if table:
            lines.append(f"{var}: {{no_arch: {{'{version_in(url)[1:]}': '{digest}'}}}}")
        else:
            lines.append(f"{var}: {digest}")
        print(f"{name}: {url} ({len(data)} bytes)")
    with open(vars_out, "w") as f:
        f.write("# The sha256 of each file the mirror serves (tests/kubespray/mirror.py).\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
