# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the board shows of the GPUs beyond node status: GPUs by ResourceClaim and NVIDIA's
toolkit installer.

Not module code: the lab_board role's own file, beside board_server.py (which calls
:func:`read`). The objects are read as the diagnosis reads them - the DRA driver's name, its
kubelet plugin's labels and a claim's allocation are module_utils/diagnosis/dra_layers.py's, the
installer's label module_utils/diagnosis/kube_objects.py's - so the board and ``gpu_diagnose``
look at the same things.

- **DRA** (issue 48, docs/dra.md): for each node that publishes ResourceSlices, runs a DRA kubelet
  plugin Pod or carries the label the lab's DRA node registers with, the devices its slices
  publish (name, type gpu or mig, product or MIG profile, uuid) and the ResourceClaims allocated
  on it (the devices of ``status.allocation.devices.results``, the Pods of ``status.reservedFor``);
  a DRA node without slices is said so. No such node (the default lab: lab-node-2 is a kwok
  node): nothing.
- **The toolkit installer** (issue 49, docs/toolkit.md): each Pod of the GPU Operator's toolkit
  DaemonSet (label ``app=nvidia-container-toolkit-daemonset``) - its node, phase and Ready, its
  ``RUNTIME_RESTART_MODE`` (when unset, NVIDIA's installer's default: ``signal`` for containerd) and its version
  (the image's tag: the role builds ``nvcr.io/nvidia/k8s/container-toolkit:<version>-ubuntu20.04``,
  upstream's form; no environment variable carries it).

Every read is a GET; what cannot be read is said on the page, the rest is still shown.
"""

import re

from ansible.module_utils.diagnosis.dra_layers import DRA_DRIVER, DRA_PLUGIN_SELECTORS, Dra
from ansible.module_utils.diagnosis.kube_objects import TOOLKIT_SELECTOR
from ansible.module_utils.kube.client import KubeError, condition
from ansible.module_utils.kube.label_selector import label_selector

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
PODS = "/api/v1/pods"
# the label the lab's DRA node registers with and NVIDIA's chart selects it by (roles/gpu_dra:
# gpu_dra_node_label, the chart's kubeletPlugin.nodeSelector): a DRA node even while it publishes nothing
DRA_NODE_LABEL = "gpu-incident-lab/dra-node"
LIST_LIMIT = 500   # objects of one kind read each poll; more are said, not read
# how NVIDIA's installer restarts the runtime when RUNTIME_RESTART_MODE is not set, by its RUNTIME
# (cmd/nvidia-ctk-installer/container/runtime: containerd's and docker's DefaultRestartMode
# "signal", crio's "systemd"; RUNTIME unset is containerd)
DEFAULT_RESTART_MODES = {"containerd": "signal", "docker": "signal", "crio": "systemd"}
RESTART_MODES = {
    "none": "writes {runtime}'s config and does not restart it: the running {runtime} keeps what it loaded",
    "signal": "sends {runtime} SIGHUP after writing (containerd 1.6 exits on it; its supervisor starts it again)",
    "systemd": "restarts {runtime} with systemd on the host after writing",
}
VERSION = re.compile(r"v?\d+\.\d+\.\d+(?:-rc\.\d+)?")


class Unread(Exception):
    """A list the board could not read: why, in words (the API server's own answer); absent when
    the API server serves no such path (a cluster without resource.k8s.io/v1)."""

    def __init__(self, why, absent=False):
        Exception.__init__(self, why)
        self.absent = absent


def listing(kube, path, selector=None):
    """(items, more): one page of a list (LIST_LIMIT), kept to the selector's objects as the API
    server keeps them; more is true when the API server has more than the page."""
    params = {"limit": LIST_LIMIT}
    if selector:
        params["labelSelector"] = selector
    try:
        page = kube.get(path, params=params) or {}
    except KubeError as exc:
        raise Unread("GET %s: %s" % (path, exc), absent=exc.status == 404)
    keep = label_selector(selector) if selector else (lambda labels: True)
    items = [i for i in page.get("items") or []
             if isinstance(i, dict) and keep((i.get("metadata") or {}).get("labels") or {})]
    return items, bool((page.get("metadata") or {}).get("continue"))


def attribute(device, name, driver=DRA_DRIVER):
    """A device attribute's value ({string|version|int|bool}: the one set), by its short name or
    qualified by the driver's domain; None when the device has none."""
    attrs = device.get("attributes") or {}
    value = attrs.get(name, attrs.get("%s/%s" % (driver, name)))
    if not isinstance(value, dict):
        return None
    for kind in ("string", "version", "int", "bool"):
        if kind in value:
            return value[kind]
    return None


def pod_state(pod):
    """'ns/name Running, Ready True' of a Pod."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    return "%s/%s %s, Ready %s" % (meta.get("namespace"), meta.get("name"), status.get("phase") or "Unknown",
                                   condition(pod, "Ready").get("status") or "<unset>")


def claim_node(claim, pools):
    """The node a claim's devices are on: the slice of each result's driver and pool, else the
    allocation's node selector (metadata.name In [node]), else None."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    for result in (allocation.get("devices") or {}).get("results") or []:
        node = pools.get((result.get("driver"), result.get("pool")))
        if node:
            return node
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and len(field.get("values") or []) == 1:
                return field["values"][0]
    return None


def device_row(device, driver):
    kind = attribute(device, "type", driver) or "?"
    product = attribute(device, "productName", driver)
    profile = attribute(device, "profile", driver)
    memory = ((device.get("capacity") or {}).get("memory") or {}).get("value")
    return {"name": device.get("name") or "?", "driver": driver or "?", "type": kind,
            "model": ("%s (of %s)" % (profile, product) if profile and product else profile or product or "-"),
            "profile": profile or "", "uuid": attribute(device, "uuid", driver) or "-",
            "parent": attribute(device, "parentUUID", driver) or "", "memory": memory or "-", "claims": []}


def dra_view(node_labels, slices, claims, plugin_pods, slices_more=False):
    """The DRA part of the board: {nodes: [{name, plugin, devices, claims, empty}], note}. A node is
    shown when it has slices, a DRA kubelet plugin Pod or the lab's DRA node label; none: nodes []."""
    by_node, pools = {}, {}
    for piece in slices:
        spec = piece.get("spec") or {}
        node = spec.get("nodeName")
        if not node:
            continue
        by_node.setdefault(node, []).append(piece)
        pools[(spec.get("driver"), (spec.get("pool") or {}).get("name"))] = node
    plugins = {}
    for pod in plugin_pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            plugins.setdefault(node, []).append(pod)
    labelled = {n for n, labels in node_labels.items() if (labels or {}).get(DRA_NODE_LABEL) == "true"}
    names = sorted(set(by_node) | set(plugins) | labelled)
    on_node = {}
    for claim in claims:
        node = claim_node(claim, pools)
        if node:
            on_node.setdefault(node, []).append(claim)
    out = []
    for name in names:
        mine = by_node.get(name, [])
        published = Dra([], mine, None, [], None, {}).devices()
        devices, seen = [], set()
        for piece in sorted(mine, key=lambda s: (s.get("metadata") or {}).get("name") or ""):
            driver = (piece.get("spec") or {}).get("driver")
            for device in (piece.get("spec") or {}).get("devices") or []:
                if isinstance(device, dict) and device.get("name") not in seen:
                    seen.add(device.get("name"))
                    devices.append(device_row(device, driver))
        devices.sort(key=lambda d: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", d["name"])])
        rows = {d["name"]: d for d in devices}
        claim_rows = []
        for claim in on_node.get(name, []):
            meta = claim.get("metadata") or {}
            ref = "%s/%s" % (meta.get("namespace"), meta.get("name"))
            held = []
            for _name, driver, pool, device in Dra([(ref, claim, None)], [], None, [], None, {}).allocated():
                row = rows.get(device) if pools.get((driver, pool)) == name else None
                if row is not None:
                    row["claims"].append(ref)
                held.append({"device": device or "?", "driver": driver or "?", "pool": pool or "?",
                             "uuid": row["uuid"] if row else "", "published": device in published})
            pods = ["%s/%s" % (meta.get("namespace"), r.get("name")) if r.get("resource") == "pods"
                    else "%s %s" % (r.get("resource"), r.get("name"))
                    for r in (claim.get("status") or {}).get("reservedFor") or []]
            claim_rows.append({"ref": ref, "devices": held, "pods": pods})
        claim_rows.sort(key=lambda c: c["ref"])
        mine_plugins = plugins.get(name, [])
        plugin = ("; ".join(pod_state(p) for p in mine_plugins) if mine_plugins
                  else "no Pod on %s (label %s)" % (name, " or ".join(DRA_PLUGIN_SELECTORS)))
        empty = None
        if not devices:
            empty = "no ResourceSlices for %s - NVIDIA's DRA kubelet plugin has published nothing" % name
            if not mine_plugins:
                empty += " (no DRA kubelet plugin Pod runs on it)"
            elif all((p.get("status") or {}).get("phase") == "Running" and condition(p, "Ready").get("status") == "True"
                     for p in mine_plugins):
                # the kubelet wipes its node's slices at start; the plugin publishes again ~30 s on (docs/dra.md)
                empty += " (its Pod %s; after a kubelet restart the slices come back 30-55 s later)" % pod_state(mine_plugins[0])
            else:
                empty += " (its Pod %s: read its log and its init container's)" % pod_state(mine_plugins[0])
        out.append({"name": name, "plugin": plugin, "devices": devices, "claims": claim_rows, "empty": empty})
    note = ("the first %d ResourceSlices read; more are not shown (kubectl get resourceslices)" % LIST_LIMIT
            if slices_more else None)
    return {"nodes": out, "note": note}


def version_of(image):
    """(version, tag) of an image reference: the tag's leading version (v1.20.2 of
    v1.20.2-ubuntu20.04), or '?' when the image has no tag (a digest)."""
    name = (image or "").split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    found = VERSION.match(tag)
    return (found.group(0) if found else tag or "?"), tag


def toolkit_view(pods):
    """NVIDIA's toolkit installer Pods: [{node, pod, phase, ready, restarts, mode, mode_set, meaning,
    version, image}] by node."""
    rows = []
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
        env = {}
        for container in containers:
            for var in container.get("env") or []:
                if isinstance(var, dict) and var.get("name"):
                    env.setdefault(var["name"], var.get("value") if "value" in var else "(from %s)" % ", ".join(
                        sorted(var.get("valueFrom") or {})))
        main = next((c for c in containers if "toolkit" in (c.get("name") or "")), containers[0] if containers else {})
        image = main.get("image") or ""
        version, tag = version_of(image)
        runtime = env.get("RUNTIME") or "containerd"
        mode = env.get("RUNTIME_RESTART_MODE")
        shown = mode or DEFAULT_RESTART_MODES.get(runtime, "signal")
        restarts = sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or [] if isinstance(c, dict))
        rows.append({"node": spec.get("nodeName") or "", "pod": "%s/%s" % (meta.get("namespace"), meta.get("name")),
                     "phase": status.get("phase") or "Unknown", "ready": condition(pod, "Ready").get("status") or "<unset>",
                     "restarts": restarts, "mode": shown, "mode_set": mode is not None,
                     "meaning": RESTART_MODES.get(shown, "").format(runtime=runtime), "version": version,
                     "tag": tag, "image": image or "?"})
    return sorted(rows, key=lambda r: (r["node"] == "", r["node"], r["pod"]))


def read(kube, node_labels):
    """What the board shows of the GPUs beyond node status, read with kube (GETs):
    {dra: {nodes, note, problem}, toolkit: {rows, problem}}. node_labels: {node: labels} of the
    nodes the board lists."""
    dra = {"nodes": [], "note": None, "problem": None}
    toolkit = {"rows": [], "problem": None, "selector": TOOLKIT_SELECTOR}
    try:
        toolkit["rows"] = toolkit_view(listing(kube, PODS, TOOLKIT_SELECTOR)[0])
    except Unread as why:
        toolkit["problem"] = "NVIDIA's toolkit installer Pods cannot be read: %s" % why
    try:
        slices, more = listing(kube, SLICES)
    except Unread as why:
        if not why.absent:   # a cluster without resource.k8s.io/v1 has no DRA to show
            dra["problem"] = "the ResourceSlices cannot be read: %s" % why
        return {"dra": dra, "toolkit": toolkit}
    plugin_pods = []
    try:
        for selector in DRA_PLUGIN_SELECTORS:
            plugin_pods += listing(kube, PODS, selector)[0]
    except Unread as why:
        dra["problem"] = "the DRA kubelet plugin's Pods cannot be read: %s" % why
    claims = []
    labelled = any((labels or {}).get(DRA_NODE_LABEL) == "true" for labels in node_labels.values())
    if slices or plugin_pods or labelled:
        try:
            claims = listing(kube, CLAIMS)[0]
        except Unread as why:
            dra["problem"] = "the ResourceClaims cannot be read: %s" % why
    dra.update(dra_view(node_labels, slices, claims, plugin_pods, more))
    return {"dra": dra, "toolkit": toolkit}
