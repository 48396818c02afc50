#!/usr/bin/env python3
"""Builds a stand-in container image for each image kubespray's download role pulls and
pushes it to the local registry.

    images.py PLAN REGISTRY

PLAN is what mirror-plan.yml wrote for the images: one `name<TAB>repo<TAB>tag<TAB>hosts`
line per enabled container download, its repo already pointing at the registry (run.sh
sets kubespray's *_image_repo variables to REGISTRY/<the registry they stand for>, so
`registry.k8s.io/pause` is pulled as `REGISTRY/registry.k8s.io/pause`). REGISTRY is the
`host:port` of a plain-HTTP distribution registry (Debian's docker-registry, run by run.sh).

What the images hold: no registry here carries kubespray's images, so each is a STAND-IN:
a valid Docker image (schema 2 manifest, linux/amd64) with one small layer holding
/STAND-IN, a text naming the image it stands in for. It is only pulled, never run. Output
is deterministic (fixed file times, gzip without a name or time): the same plan pushes the
same digests.
"""
import gzip
import hashlib
import io
import json
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request

MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG = "application/vnd.docker.container.image.v1+json"
LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def image(name, ref):
    """The config, gzipped layer and manifest of the stand-in for `ref`."""
    text = (
        f"STAND-IN for {ref} (kubespray download {name}): served by kk's kubespray test\n"
        "registry (tests/kubespray/images.py). Not the real image; it is only pulled.\n"
    ).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("STAND-IN")
        info.size, info.mode, info.mtime = len(text), 0o644, 0
        tar.addfile(info, io.BytesIO(text))
    layer_tar = raw.getvalue()
    layer = gzip.compress(layer_tar, mtime=0)
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Cmd": ["/STAND-IN"], "Labels": {"kk.stand-in": ref}},
            "rootfs": {"type": "layers", "diff_ids": [digest(layer_tar)]},
            "history": [{"created_by": "tests/kubespray/images.py", "comment": "stand-in"}],
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": {"mediaType": CONFIG, "size": len(config), "digest": digest(config)},
            "layers": [{"mediaType": LAYER, "size": len(layer), "digest": digest(layer)}],
        },
        sort_keys=True,
    ).encode()
    return config, layer, manifest


def call(method, url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers
    except urllib.error.HTTPError as e:
        if method == "HEAD" and e.code == 404:
            return 404, e.headers
        body = e.read().decode(errors="replace")
        sys.exit(f"images.py: {method} {url}: HTTP {e.code}: {body}")


def push_blob(base, path, data):
    d = digest(data)
    if call("HEAD", f"{base}/v2/{path}/blobs/{d}")[0] == 200:
        return
    _, h = call("POST", f"{base}/v2/{path}/blobs/uploads/", b"")
    loc = urllib.parse.urljoin(base + "/", h["Location"])
    sep = "&" if "?" in loc else "?"
    call(
        "PUT",
        f"{loc}{sep}digest={urllib.parse.quote(d)}",
        data,
        {"Content-Type": "application/octet-stream"},
    )


def main():
    plan, registry = sys.argv[1:3]
    base = "http://" + registry
    rows = sorted(l.split("\t") for l in open(plan).read().splitlines() if l.strip())
    for row in rows:
        name, repo, tag, hosts = (c.strip() for c in row[:4])
        if not repo.startswith(registry + "/"):
            sys.exit(
                f"images.py: download {name}: repo {repo!r} is not on the registry {registry}"
                " (a *_image_repo variable run.sh does not override?)"
            )
        path = repo[len(registry) + 1 :]
        config, layer, manifest = image(name, f"{path}:{tag}")
        push_blob(base, path, layer)
        push_blob(base, path, config)
        call("PUT", f"{base}/v2/{path}/manifests/{tag}", manifest, {"Content-Type": MANIFEST})
        print(f"{name}: {repo}:{tag} {digest(manifest)} (for {hosts or 'no host'})")


if __name__ == "__main__":
    main()
