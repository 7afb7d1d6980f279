#!/usr/bin/env python3
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real node's /etc/containerd: the lab folder's files as this machine can run them.

    node_view.py SRC DST main|all LAB_ROOT SYSTEMD_CGROUP_FALSE RESTRICT_OOM

SRC is LAB_ROOT/etc/containerd (the trainee's files), DST the folder the node's mount namespace
binds to /etc/containerd. `main` copies config.toml alone (the incident day: containerd started
before the drop-in arrived), `all` every file. Prints each .toml that arrived or changed, one per
line (what containerd's imports can name). Files in DST that SRC no longer has are removed.

What the copy changes - the machine adaptations docs/real-node.md lists, nothing else:
- a path into the lab folder (LAB_ROOT/etc/containerd/...) names the node's own /etc/containerd;
- SYSTEMD_CGROUP_FALSE=true (no systemd on this machine): `SystemdCgroup = true` -> false,
  since runc cannot use the systemd cgroup driver without systemd;
- RESTRICT_OOM=true (this kernel refuses a negative oom_score_adj: runc then fails with "can't
  get final child's PID from pipe: EOF"): the CRI table of a file that configures CRI gets
  `restrict_oom_score_adj = true`; with no main config at all, a generated one holds only that.
"""
import os
import re
import sys

CRI = {"2": 'plugins."io.containerd.grpc.v1.cri"', "3": 'plugins."io.containerd.cri.v1.runtime"'}
GENERATED = ("# Written by the lab: {src}/config.toml does not exist yet, so containerd\n"
             "# runs on its defaults plus the one setting this machine needs (see docs/real-node.md).\n"
             "version = 2\n\n[" + CRI["2"] + "]\n  restrict_oom_score_adj = true\n")


def restrict_oom(text, main=False):
    """restrict_oom_score_adj = true in the CRI table of a file that configures CRI - and of the
    main config always: containerd runs its CRI plugin on its defaults when no file configures it
    (lab-node-2's `version = 2` alone on containerd 1.6.20 started no sandbox: "can't get final
    child's PID from pipe: EOF")."""
    if "restrict_oom_score_adj" in text:
        return text
    version = "3" if re.search(r"(?m)^\s*version\s*=\s*3\b", text) else "2"
    table = CRI[version]
    # the table's header in either TOML quoting - containerd's own `config default` writes 2.x's
    # as plugins.'io.containerd.cri.v1.runtime' (a literal string); a header missed here was
    # written a second time, and containerd refused the file ("table ... already exists")
    name = table.split('"')[1]
    header = re.compile(r"(?m)^\s*\[\s*plugins\s*\.\s*(?:\"" + re.escape(name) + r"\"|'" + re.escape(name) + r"')\s*\]\s*$")
    if header.search(text):
        return header.sub(lambda m: m.group(0) + "\n  restrict_oom_score_adj = true", text, count=1)
    if not main and table.split('"')[1] not in text:
        return text   # this drop-in does not configure CRI
    return text.rstrip("\n") + "\n\n[" + table + "]\n  restrict_oom_score_adj = true\n"


def adapt(text, lab_root, systemd_false, restrict, main=False):
    """One .toml file as the node loads it (the adaptations of the module docstring)."""
    text = text.replace(lab_root.rstrip("/") + "/etc/containerd", "/etc/containerd")
    if systemd_false:
        text = re.sub(r"(?m)^(\s*SystemdCgroup\s*=\s*)true\b", r"\1false", text)
    if restrict:
        text = restrict_oom(text, main)
    return text


def wanted(src, mode):
    """relative path -> source path of every file the view should hold."""
    want = {}
    if os.path.isdir(src):
        for root, _dirs, files in os.walk(src):
            for name in files:
                rel = os.path.relpath(os.path.join(root, name), src)
                if mode == "main" and rel != "config.toml":
                    continue
                want[rel] = os.path.join(root, name)
    return want


def sync(src, dst, mode, lab_root, systemd_false, restrict):
    """Bring DST to the view of SRC; return the .toml files that arrived or changed."""
    want = wanted(src, mode)
    os.makedirs(dst, exist_ok=True)
    generated = None
    if "config.toml" not in want and restrict:
        generated = GENERATED.format(src=src).encode()
        want["config.toml"] = None
    for root, _dirs, files in os.walk(dst):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), dst)
            if rel not in want:
                os.remove(os.path.join(root, name))
    changed = []
    for rel, path in sorted(want.items()):
        if path is None:
            data = generated
        else:
            with open(path, "rb") as handle:
                data = handle.read()
            if rel.endswith(".toml"):
                text = adapt(data.decode("utf-8", "surrogateescape"), lab_root, systemd_false, restrict,
                             rel == "config.toml")
                data = text.encode("utf-8", "surrogateescape")
        out = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        old = None
        if os.path.exists(out):
            with open(out, "rb") as handle:
                old = handle.read()
        if old != data:
            with open(out + ".tmp", "wb") as handle:
                handle.write(data)
            os.replace(out + ".tmp", out)
            if rel.endswith(".toml"):
                changed.append(rel)
    return changed


def main(argv):
    if len(argv) != 7 or argv[3] not in ("main", "all"):
        sys.stderr.write("usage: node_view.py SRC DST main|all LAB_ROOT SYSTEMD_CGROUP_FALSE RESTRICT_OOM\n")
        return 2
    src, dst, mode, lab_root, systemd_false, restrict = argv[1:7]
    for rel in sync(src, dst, mode, lab_root, systemd_false == "true", restrict == "true"):
        print(rel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
