#!/usr/bin/env python3
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the real node's local images as one OCI image-layout tarball (no registry needed).

    oci_image.py SPEC.json OUT.tar

SPEC.json is a list of images:
    [{"names": ["gpu-incident-lab.local/busybox:1.35"],
      "files": {"/bin/busybox": "/path/on/this/machine"},
      "symlinks": {"/bin/sh": "busybox"},
      "entrypoint": ["/bin/sh"], "cmd": ["-c", "..."]}]

Every image is one layer. The tarball is byte-for-byte the same for the same inputs (sorted
entries, mtime 0, owner 0), so the role can tell "already imported" by its digest. The names
go into index.json as `io.containerd.image.name` (what `ctr images import` names an image by)
and `org.opencontainers.image.ref.name`.
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


def _blob(blobs, data, media_type):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def _layer(image):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = set()
        entries = [(p, "file", src) for p, src in image.get("files", {}).items()]
        entries += [(p, "link", target) for p, target in image.get("symlinks", {}).items()]
        for path, _kind, _src in entries:
            parts = path.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        for d in sorted(dirs):
            info = tarfile.TarInfo(d + "/")
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for path, kind, src in sorted(entries):
            info = tarfile.TarInfo(path.strip("/"))
            info.mtime = 0
            if kind == "link":
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, src, 0o777
                tar.addfile(info)
            else:
                with open(src, "rb") as f:
                    data = f.read()
                info.size, info.mode = len(data), os.stat(src).st_mode & 0o7777
                tar.addfile(info, io.BytesIO(data))
    diff = raw.getvalue()
    zipped = io.BytesIO()
    # level 1: the layers are read once, on this machine (level 9 took 7 s for NVIDIA's binaries)
    with gzip.GzipFile(fileobj=zipped, mode="wb", mtime=0, compresslevel=1) as gz:
        gz.write(diff)
    return diff, zipped.getvalue()


def build(spec, out):
    blobs, manifests = {}, []
    for image in spec:
        diff, zipped = _layer(image)
        layer = _blob(blobs, zipped, "application/vnd.oci.image.layer.v1.tar+gzip")
        config = {
            "architecture": "amd64", "os": "linux",
            "config": {"Entrypoint": image.get("entrypoint"), "Cmd": image.get("cmd"),
                       "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(diff).hexdigest()]},
        }
        cfg = _blob(blobs, json.dumps(config, sort_keys=True).encode(),
                    "application/vnd.oci.image.config.v1+json")
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": cfg, "layers": [layer]}
        desc = _blob(blobs, json.dumps(manifest, sort_keys=True).encode(),
                     "application/vnd.oci.image.manifest.v1+json")
        for name in image["names"]:
            entry = dict(desc, annotations={"io.containerd.image.name": name,
                                            "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]},
                         platform={"architecture": "amd64", "os": "linux"})
            manifests.append(entry)
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": manifests}
    files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
             "index.json": json.dumps(index, sort_keys=True).encode()}
    for digest, data in blobs.items():
        files["blobs/sha256/" + digest.split(":", 1)[1]] = data
    tmp = out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("blobs/", "blobs/sha256/"):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    os.replace(tmp, out)


def key(spec):
    """What the tarball is made of - the images' names, configs, links and the content (not the
    path) of every file - as one sha256: the same key, the same tarball, whatever lab asks."""
    digest = hashlib.sha256()
    for image in spec:
        files = {}
        for path, src in sorted(image.get("files", {}).items()):
            with open(src, "rb") as f:
                files[path] = hashlib.sha256(f.read()).hexdigest()
        shape = dict(image, files=files)
        digest.update(json.dumps(shape, sort_keys=True).encode())
    with open(os.path.abspath(__file__), "rb") as f:
        digest.update(f.read())
    return digest.hexdigest()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--key":
        with open(sys.argv[2]) as f:
            print(key(json.load(f)))
        sys.exit(0)
    if len(sys.argv) != 3:
        sys.exit("usage: oci_image.py SPEC.json OUT.tar")
    with open(sys.argv[1]) as f:
        build(json.load(f), sys.argv[2])
