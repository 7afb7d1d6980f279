# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CDI specs on a node and the GPU devices its containers got: read on the node, kept small.

CDI (the Container Device Interface) is how a device reaches a container by name: a spec file
(``*.json`` or ``*.yaml`` in the spec folders - ``/etc/cdi`` and ``/var/run/cdi``, or those the
runtime names: ``crictl info`` ``.config.cdiSpecDirs``) has a ``kind`` (vendor/class), a
``cdiVersion``, devices by name and what each adds to a container (``containerEdits``: its
``deviceNodes``, mounts, hooks); the spec's own ``containerEdits`` come with any of its devices.
The kubelet hands containerd a prepared ResourceClaim's devices as CDI names
(``<kind>=<device>``, the CRI ContainerConfig's ``CDI_devices``); containerd applies them only
with CDI (1.7+ ``enable_cdi``, 2.x on by default, 2.4+ always) - 1.6 drops them.

NVIDIA's DRA driver (sigs.k8s.io/dra-driver-nvidia-gpu, cmd/gpu-kubelet-plugin/cdi.go) writes one
spec per prepared claim: kind ``k8s.gpu.nvidia.com/claim``, file
``/var/run/cdi/k8s.gpu.nvidia.com-claim_<claim uid>.yaml`` (the CDI library's
GenerateTransientSpecName), one device ``<claim uid>-<device>`` (``...-gpu-2``) per allocated GPU.

- :func:`read_specs`: each spec's file, cdiVersion, kind, device names and the device nodes each
  adds, bounded (:data:`MAX_SPECS` files of at most :data:`MAX_SPEC_BYTES`, :data:`MAX_DEVICES`
  devices, :data:`MAX_NODES` nodes each) - the node's ``cdi-specs.json``.
- :func:`containers_summary`: of ``crictl inspect`` (containerd's verbose status: ``info.runtimeSpec``
  and ``info.config``), each running container's Pod, name, its ``/dev/nvidia*`` device nodes and the
  CDI devices its CRI config kept - the node's ``container-devices.json``.
node/artefacts.py reads both files back into node facts (``cdi_specs``, ``container_devices``), live
and from a bundle alike.
Ansible-free; it reads, never writes.
"""

import json
import os

from ansible.module_utils.lab.yaml_load import yaml

# CDI's own default spec folders (container-device-interface pkg/cdi: DefaultStaticDir, DefaultDynamicDir)
DEFAULT_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
# the files CDI reads in a spec folder
SPEC_SUFFIXES = (".json", ".yaml")
# the bounds of cdi-specs.json
MAX_SPECS = 64
MAX_SPEC_BYTES = 1024 * 1024
MAX_DEVICES = 64
MAX_NODES = 16
# the bounds of container-devices.json: containers, and ids per crictl inspect call
MAX_CONTAINERS = 200
INSPECT_CHUNK = 50
# the device nodes of NVIDIA's GPUs a container can get (/dev/nvidia<minor>, nvidiactl, -uvm, -caps/...)
GPU_NODE_PREFIX = "/dev/nvidia"
# the kubelet's labels on a container (pkg/kubelet/types/labels.go)
POD_NAMESPACE = "io.kubernetes.pod.namespace"
POD_NAME = "io.kubernetes.pod.name"
CONTAINER_NAME = "io.kubernetes.container.name"


def under(root, path):
    """`path` of the node as this host sees it: under `root` (the node's / here; "" or / = this host's).

    Its symlinks are followed inside `root`, one part at a time: the node's ``/var/run`` is a link
    to ``/run``, and the kernel would resolve that absolute target from THIS host's / - also under
    ``/proc/<pid>/root``, where the node's own ``/run`` is."""
    if not root or root == "/":
        return path
    parts = [p for p in path.split("/") if p]
    done = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            done = done[:-1]
            continue
        here = os.path.join(root, *(done + [part]))
        try:
            target = os.readlink(here) if hops < 40 and os.path.islink(here) else None
        except OSError:
            target = None                 # gone meanwhile: read as it is
        if target is not None:
            hops += 1
            if target.startswith("/"):
                done = []                 # the node's /, not this host's
            parts = [p for p in target.split("/") if p] + parts
            continue
        done.append(part)
    return os.path.join(root, *done)


# ------------------------------------------------------------------------------- the specs
def _device_nodes(edits):
    """The paths of containerEdits.deviceNodes (the first MAX_NODES)."""
    nodes = (edits or {}).get("deviceNodes") if isinstance(edits, dict) else None
    return [str(n["path"]) for n in nodes or [] if isinstance(n, dict) and n.get("path")][:MAX_NODES]


def spec_summary(doc):
    """{cdiVersion, kind, device_nodes (the spec's own edits), devices [{name, device_nodes}]} of a
    parsed spec, or {error} when it is not one."""
    if not isinstance(doc, dict) or not doc.get("kind"):
        return {"error": "not a CDI spec: no kind (a CDI spec is a mapping with cdiVersion, kind, devices)"}
    out = {"cdiVersion": str(doc.get("cdiVersion") or ""), "kind": str(doc["kind"])}
    common = _device_nodes(doc.get("containerEdits"))
    if common:
        out["device_nodes"] = common
    devices = [d for d in doc.get("devices") or [] if isinstance(d, dict)] if isinstance(doc.get("devices"), list) else []
    out["devices"] = [{"name": str(d.get("name") or ""), "device_nodes": _device_nodes(d.get("containerEdits"))}
                      for d in devices[:MAX_DEVICES]]
    if len(devices) > MAX_DEVICES:
        out["devices_left_out"] = len(devices) - MAX_DEVICES
    return out


def _load(data, path):
    """(document, None) of a spec file's bytes, or (None, why not)."""
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text), None       # JSON is YAML too: a .yaml spec may be JSON
    except ValueError as exc:
        if path.endswith(".json"):
            return None, "not JSON (line %s: %s)" % (getattr(exc, "lineno", "?"), getattr(exc, "msg", exc))
    if yaml is None:
        return None, "a YAML spec, and PyYAML is not installed where the node was read (pip install PyYAML)"
    try:
        return yaml.safe_load(text), None
    except yaml.YAMLError as exc:
        return None, "not YAML (%s)" % str(exc).splitlines()[0]


def read_spec(path, shown):
    """One spec file's summary: {file: `shown` (its path on the node), ...spec_summary or error}."""
    entry = {"file": shown}
    try:
        size = os.path.getsize(path)
        if size > MAX_SPEC_BYTES:
            entry["error"] = "%d bytes: larger than the %d read of a spec" % (size, MAX_SPEC_BYTES)
            return entry
        with open(path, "rb") as handle:
            data = handle.read(MAX_SPEC_BYTES)
    except OSError as exc:
        entry["error"] = "cannot read it: %s" % (exc.strerror or exc)
        return entry
    doc, why = _load(data, path)
    entry.update({"error": why} if why else spec_summary(doc))
    return entry


def read_specs(dirs, root="/"):
    """cdi-specs.json's document: {dirs: [{dir, state (read, absent, unreadable: why), specs}],
    specs: [read_spec of each *.json/*.yaml, by folder then name], specs_left_out, root}.
    `dirs`: the spec folders as the node names them; `root`: where the node's / is here."""
    out = {"dirs": [], "specs": []}
    left = 0
    for folder in dirs:
        here = under(root, folder)
        if not os.path.isdir(here):
            out["dirs"].append({"dir": folder, "state": "absent"})
            continue
        try:
            names = sorted(n for n in os.listdir(here) if n.endswith(SPEC_SUFFIXES))
        except OSError as exc:
            out["dirs"].append({"dir": folder, "state": "unreadable: %s" % (exc.strerror or exc)})
            continue
        out["dirs"].append({"dir": folder, "state": "read", "specs": len(names)})
        for name in names:
            if len(out["specs"]) >= MAX_SPECS:
                left += 1
                continue
            shown = folder.rstrip("/") + "/" + name
            out["specs"].append(read_spec(under(root, shown), shown))
    if left:
        out["specs_left_out"] = left
    if root and root != "/":
        out["root"] = root
    return out


# -------------------------------------------------------------------------- the containers
def running_ids(text):
    """The ids of ``crictl ps -o json`` (its running containers), or ValueError saying why not."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("containers"), list):
        raise ValueError("no containers list in its output")
    return [c["id"] for c in doc["containers"] if isinstance(c, dict) and c.get("id")]


def inspected(text):
    """The statuses of ``crictl inspect -o json ID...``: one object for one id, a list for more."""
    doc = json.loads(text)
    docs = doc if isinstance(doc, list) else [doc]
    return [d for d in docs if isinstance(d, dict)]


def container_entry(doc):
    """{id, pod, container, devices (its /dev/nvidia* nodes), cdi_devices (when its CRI config kept
    them)} of one container's ``crictl inspect``; note when the status has no OCI spec."""
    status = doc.get("status") if isinstance(doc.get("status"), dict) else {}
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    labels = status.get("labels") if isinstance(status.get("labels"), dict) else {}
    entry = {"id": str(status.get("id") or "")[:13],
             "pod": "%s/%s" % (labels.get(POD_NAMESPACE, "?"), labels.get(POD_NAME, "?")),
             "container": labels.get(CONTAINER_NAME) or (status["metadata"].get("name") if isinstance(
                 status.get("metadata"), dict) else None) or "?"}
    spec = info.get("runtimeSpec")
    if isinstance(spec, dict):
        devices = ((spec.get("linux") or {}).get("devices") or []) if isinstance(spec.get("linux"), dict) else []
        entry["devices"] = sorted({str(d["path"]) for d in devices if isinstance(d, dict)
                                   and str(d.get("path") or "").startswith(GPU_NODE_PREFIX)})[:4 * MAX_NODES]
    else:
        entry["note"] = "crictl inspect shows no info.runtimeSpec (not containerd's verbose status)"
    config = info.get("config")
    if isinstance(config, dict) and isinstance(config.get("CDI_devices"), list):
        entry["cdi_devices"] = [str(c.get("name")) for c in config["CDI_devices"] if isinstance(c, dict)]
    return entry


def containers_summary(docs, left_out=0, vanished=0):
    """container-devices.json's document: {containers: [container_entry], left_out, vanished}."""
    out = {"containers": sorted((container_entry(d) for d in docs), key=lambda e: (e["pod"], e["container"]))}
    if left_out:
        out["left_out"] = left_out
    if vanished:
        out["vanished"] = vanished
    return out
