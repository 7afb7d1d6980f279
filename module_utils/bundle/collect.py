# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU support bundle: what it holds, how it is collected and written - Ansible-free.

The layout (issue 21; tests outside this repository build bundles in it, and gpu_diagnose
reads it with ``bundle: DIR``)::

    bundle.json                                the index: what was collected, what is missing and why
    cluster/nodes.json                         kubectl get nodes -o json
    cluster/pods.json                          kubectl get pods -A -o json        (env values redacted)
    cluster/runtimeclasses.json                kubectl get runtimeclasses -o json
    cluster/events.json                        kubectl get events -A -o json
    cluster/daemonsets.json                    kubectl get daemonsets -A -o json  (env values redacted)
    cluster/configmaps.json                    kubectl get configmaps -A -o json  (data outside the GPU stack redacted)
    logs/<namespace>/<pod>.log                 kubectl logs --all-containers
    nodes/<node>/nvidia-smi.txt                nvidia-smi (stdout and stderr as printed)
    nodes/<node>/nvidia-smi-query.csv          nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv,noheader
    nodes/<node>/crictl-info.json              crictl info
    nodes/<node>/containerd-config-dump.toml   containerd config dump
    nodes/<node>/containerd.log                the containerd log (a file, or journalctl -u containerd)
    nodes/<node>/kubelet.log                   the kubelet log (a file, or journalctl -u kubelet)
    nodes/<node>/device-plugins.txt            ls -1 /var/lib/kubelet/device-plugins
    nodes/<node>/dmesg.txt                     dmesg (or journalctl -k)
    nodes/<node>/fabric-manager.txt            systemctl status nvidia-fabricmanager
    nodes/<node>/mig-lgip.txt, mig-lgipp.txt   nvidia-smi mig -lgip / -lgipp

Any file may be absent; bundle.json says why for each (``missing``: the tool or object is not
there; ``failed``: it ran and failed - its exit code and output are kept in bundle.json;
``skipped``: not asked for). A file is written only from a command that succeeded, except
nvidia-smi.txt and fabric-manager.txt, which are the command's words either way.

Secrets never go in: no Secret objects are read; every Pod's (and Pod template's) env
``value`` is replaced by REDACTED (names and ``valueFrom`` references kept); ConfigMap
``data``/``binaryData`` values outside the GPU stack are replaced by REDACTED (keys kept);
``kubectl.kubernetes.io/last-applied-configuration`` annotations (a full copy of the object)
are replaced by REDACTED; managedFields are dropped (as kubectl hides them). Then every file
the bundle writes - bundle.json, the cluster files, the logs, the node files - passes the
redaction engine (module_utils/bundle/redact.py: built-in rules and the user's), the node
files already on the node, so no secret travels; bundle.json's ``redactions`` says per file
which rule hid how many values (never a value). With ``archive`` the same files also go into
``<dest>.tar.gz`` (module_utils/bundle/archive.py).
"""

import base64
import binascii
import datetime
import json
import os
import re
import shutil
import tempfile

from ansible.module_utils.node import commands as node_commands
from ansible.module_utils.node import nvidia_smi
from ansible.module_utils.bundle import archive as bundle_archive
from ansible.module_utils.bundle.redact import MARKER, RedactError, Redactor
from ansible.module_utils.diagnosis.sources import parse_selector as label_selector
from ansible.module_utils.lab.refusals import LabError

FORMAT = "gpu-incident-lab/support-bundle"
FORMAT_VERSION = 1
INDEX = "bundle.json"
REDACTED = MARKER
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

# file -> (API path, apiVersion and kind of each item, the kubectl command it equals)
CLUSTER_FILES = [
    ("cluster/nodes.json", "/api/v1/nodes", "v1", "Node", "kubectl get nodes -o json"),
    ("cluster/pods.json", "/api/v1/pods", "v1", "Pod", "kubectl get pods -A -o json"),
    ("cluster/runtimeclasses.json", "/apis/node.k8s.io/v1/runtimeclasses", "node.k8s.io/v1",
     "RuntimeClass", "kubectl get runtimeclasses -o json"),
    ("cluster/events.json", "/api/v1/events", "v1", "Event", "kubectl get events -A -o json"),
    ("cluster/daemonsets.json", "/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet",
     "kubectl get daemonsets -A -o json"),
    ("cluster/configmaps.json", "/api/v1/configmaps", "v1", "ConfigMap",
     "kubectl get configmaps -A -o json"),
]
KIND_FILES = {kind: rel for rel, _path, _api_version, kind, _command in CLUSTER_FILES}
NODE_FILES = ["nvidia-smi.txt", "nvidia-smi-query.csv", "crictl-info.json",
              "containerd-config-dump.toml", "containerd.log", "kubelet.log", "device-plugins.txt",
              "dmesg.txt", "fabric-manager.txt", "mig-lgip.txt", "mig-lgipp.txt"]

# The GPU stack: the namespaces the GPU Operator and the device plugin's Helm chart install into,
# and the labels of their Pods (static manifest, Operator operands, Helm chart - gpu-field notes).
STACK_NAMESPACES = ["gpu-operator", "nvidia-gpu-operator", "nvidia-device-plugin", "nvidia"]
STACK_SELECTORS = ["name=nvidia-device-plugin-ds", "app=nvidia-device-plugin-daemonset",
                   "app.kubernetes.io/name=nvidia-device-plugin", "app=gpu-feature-discovery",
                   "app.kubernetes.io/name=gpu-feature-discovery", "app=nvidia-container-toolkit-daemonset",
                   "app=nvidia-driver-daemonset", "app=nvidia-operator-validator", "app=nvidia-mig-manager",
                   "app=nvidia-dcgm-exporter", "app.kubernetes.io/part-of=gpu-operator"]


# gpu_bundle_collect's and gpu_bundle_node's `redact` suboptions: the secret parts never shown
# in Ansible's output (no_log masks them wherever they would appear in a result)
REDACT_RULE_OPTIONS = dict(name=dict(type="str"), literal=dict(type="str", no_log=True),
                           regex=dict(type="str", no_log=True), files=dict(type="list", elements="str"))


class BundleError(LabError):
    """Bad input or a destination that cannot take the bundle; the text says what to do."""


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -------------------------------------------------------------------------- selection
def parse_selector(text):
    """A label selector (k=v, k!=v, k, !k, k in (a,b)) as a predicate on labels, read as the
    diagnosis reads it; BundleError for an empty or unreadable one."""
    if not str(text).strip(" ,"):
        raise BundleError("empty label selector %r: give key=value, key or !key" % (text,))
    try:
        return label_selector(str(text), "stack_selectors")
    except LabError as exc:
        raise BundleError(exc.message)


def matches(labels, selector):
    """Do the labels match the parse_selector() predicate?"""
    return selector(labels or {})


def _containers(spec):
    for group in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(group) or []


def requests_gpu(pod, prefixes):
    for c in _containers((pod.get("spec") or {})):
        res = c.get("resources") or {}
        for key in list((res.get("limits") or {})) + list((res.get("requests") or {})):
            if any(key.startswith(p) for p in prefixes):
                return True
    return False


def stack_pods(pods, namespaces, selectors):
    terms = [parse_selector(s) for s in selectors]
    return [p for p in pods if (p.get("metadata") or {}).get("namespace") in namespaces
            or any(matches((p.get("metadata") or {}).get("labels"), t) for t in terms)]


def referenced_configmaps(pod):
    """(namespace, name) of every ConfigMap a Pod mounts (configMap volumes) or reads env from."""
    ns = (pod.get("metadata") or {}).get("namespace")
    spec = pod.get("spec") or {}
    names = set()
    # projected volumes are left out: every Pod's service-account volume projects the cluster's
    # kube-root-ca.crt, which says nothing about the GPU stack
    for volume in spec.get("volumes") or []:
        if (volume.get("configMap") or {}).get("name"):
            names.add(volume["configMap"]["name"])
    for c in _containers(spec):
        for env in c.get("env") or []:
            ref = (env.get("valueFrom") or {}).get("configMapKeyRef") or {}
            if ref.get("name"):
                names.add(ref["name"])
        for env_from in c.get("envFrom") or []:
            if (env_from.get("configMapRef") or {}).get("name"):
                names.add(env_from["configMapRef"]["name"])
    return {(ns, n) for n in names}


# -------------------------------------------------------------------------- redaction
class Redactions(object):
    """What was hidden: the object rules' totals, and per file {rule: values hidden}."""

    def __init__(self):
        self.env_values = 0
        self.configmaps = []
        self.last_applied = 0
        self.files = {}
        self.notes = {}

    def add(self, rel, counts):
        for rule, found in (counts or {}).items():
            if found:
                entry = self.files.setdefault(rel, {})
                entry[rule] = entry.get(rule, 0) + found

    def totals(self):
        return sum(sum(c.values()) for c in self.files.values()), len(self.files)

    def as_dict(self, rules=None):
        values, files = self.totals()
        out = {"env_values": self.env_values, "configmaps": sorted(self.configmaps),
               "last_applied_annotations": self.last_applied, "marker": REDACTED,
               "secrets": "never read", "values": values, "files_with_values": files,
               "files": {rel: dict(sorted(c.items())) for rel, c in sorted(self.files.items())}}
        if self.notes:
            out["notes"] = dict(sorted(self.notes.items()))
        if rules is not None:
            out["rules"] = rules
        return out


def _meta(obj, red):
    meta = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    annotations = meta.get("annotations") or {}
    if LAST_APPLIED in annotations:
        annotations[LAST_APPLIED] = REDACTED
        red.last_applied += 1


def _pod_spec(spec, red):
    for c in _containers(spec or {}):
        for env in c.get("env") or []:
            if "value" in env:
                env["value"] = REDACTED
                red.env_values += 1


def redact(kind, obj, red, keep_configmap=False):
    """The object as it may go into a bundle (changed in place, and returned); what was hidden
    is counted in red, and per file (the kind's cluster file) under the object rules' names."""
    before = (red.env_values, len(red.configmaps), red.last_applied)
    _redact(kind, obj, red, keep_configmap)
    rel = KIND_FILES.get(kind)
    if rel:
        after = (red.env_values, len(red.configmaps), red.last_applied)
        values = sum(len(v) for f in ("data", "binaryData") for v in [obj.get(f) or {}]) \
            if kind == "ConfigMap" and after[1] > before[1] else 0
        red.add(rel, {"env-value": after[0] - before[0], "configmap-value": values,
                      "last-applied": after[2] - before[2]})
    return obj


def _redact(kind, obj, red, keep_configmap):
    _meta(obj, red)
    if kind == "Pod":
        _pod_spec(obj.get("spec"), red)
    elif kind == "DaemonSet":
        _pod_spec((((obj.get("spec") or {}).get("template") or {}).get("spec")), red)
    elif kind == "ConfigMap" and not keep_configmap:
        touched = False
        for field in ("data", "binaryData"):
            for key in list((obj.get(field) or {})):
                obj[field][key] = REDACTED
                touched = True
        if touched:
            meta = obj.get("metadata") or {}
            red.configmaps.append("%s/%s" % (meta.get("namespace"), meta.get("name")))
    return obj


def as_list(items, api_version, kind):
    """What `kubectl get ... -o json` prints: a List whose items carry apiVersion and kind."""
    for item in items:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def dumps(doc):
    return (json.dumps(doc, indent=4, sort_keys=False, ensure_ascii=False) + "\n").encode("utf-8")


# -------------------------------------------------------------------------- the cluster side
def pod_log(kube, namespace, name, container, limit_bytes):
    """The text of one container's log (GET .../pods/NAME/log), as kubectl logs prints it."""
    import urllib.parse
    path = "/api/v1/namespaces/%s/pods/%s/log" % (urllib.parse.quote(namespace), urllib.parse.quote(name))
    params = {"container": container}
    if limit_bytes:
        params["limitBytes"] = str(limit_bytes)
    return kube.get_text(path, params)


def collect_cluster(kube, options, files, index, red):
    """Fill files {relpath: bytes} and index {relpath: entry} from the API server."""
    from ansible.module_utils.kube.client import KubeError
    listed = {}
    for rel, path, api_version, kind, command in CLUSTER_FILES:
        try:
            items = kube.items(path)
        except KubeError as exc:
            index[rel] = {"status": "failed" if exc.status != 404 else "missing", "source": "GET " + path,
                          "command": command, "reason": str(exc)}
            continue
        listed[kind] = items
        index[rel] = {"status": "collected", "source": "GET " + path, "command": command,
                      "items": len(items)}
    pods = listed.get("Pod") or []
    stack = stack_pods(pods, options["stack_namespaces"], options["stack_selectors"])
    stack_keys = {(p["metadata"].get("namespace"), p["metadata"]["name"]) for p in stack}
    keep_cms = set()
    for pod in stack:
        keep_cms |= referenced_configmaps(pod)
    for cm in listed.get("ConfigMap") or []:
        meta = cm.get("metadata") or {}
        keep = meta.get("namespace") in options["stack_namespaces"] or \
            (meta.get("namespace"), meta.get("name")) in keep_cms
        redact("ConfigMap", cm, red, keep_configmap=keep)
    for kind in ("Node", "Pod", "RuntimeClass", "Event", "DaemonSet"):
        for obj in listed.get(kind) or []:
            redact(kind, obj, red)
    for rel, _path, api_version, kind, _command in CLUSTER_FILES:
        if kind in listed:
            files[rel] = dumps(as_list(listed[kind], api_version, kind))

    if not options["logs"]:
        index["logs"] = {"status": "skipped", "reason": "logs: false"}
        return
    # most telling first, as max_logs may cut the list: the Pods asked for, the GPU stack on
    # their nodes and on the nodes whose side is collected, the GPU stack not ready, GPU Pods
    # not running, then the rest of the GPU stack
    by_key = {(p["metadata"].get("namespace"), p["metadata"]["name"]): p for p in pods}
    asked = []
    for ref in options["pods"]:
        ns, _sep, name = ref.partition("/")
        if (ns, name) not in asked:
            asked.append((ns, name))
    focus = set(options.get("nodes") or {})
    focus |= {((by_key.get(k) or {}).get("spec") or {}).get("nodeName") for k in asked} - {None}

    def ready(pod):
        status = pod.get("status") or {}
        return status.get("phase") == "Running" and all(
            c.get("ready") for c in status.get("containerStatuses") or [{}])

    ranked = []   # (rank, namespace, name, why)
    for key in asked:
        ranked.append((0,) + key + ("asked for",))
    for key in sorted(stack_keys - set(asked)):
        pod = by_key[key]
        node = (pod.get("spec") or {}).get("nodeName")
        if node in focus:
            ranked.append((1,) + key + ("GPU stack, on node %s" % node,))
        elif not ready(pod):
            ranked.append((2,) + key + ("GPU stack, not ready",))
        else:
            ranked.append((4,) + key + ("GPU stack",))
    for key, pod in sorted(by_key.items()):
        phase = (pod.get("status") or {}).get("phase")
        if key not in stack_keys and key not in asked and phase not in ("Running", "Succeeded") \
                and requests_gpu(pod, options["gpu_resource_prefixes"]):
            ranked.append((3,) + key + ("requests a GPU, phase %s" % phase,))
    wanted = [r[1:] for r in sorted(ranked, key=lambda r: r[0])]
    for count, (ns, name, why) in enumerate(wanted):
        rel = "logs/%s/%s.log" % (ns, name)
        pod = by_key.get((ns, name))
        if pod is None:
            index[rel] = {"status": "missing", "why": why, "reason": "no Pod %s/%s in the cluster" % (ns, name)}
            continue
        if count >= options["max_logs"]:
            index[rel] = {"status": "skipped", "why": why,
                          "reason": "more than max_logs=%d Pods; raise it to collect this one" % options["max_logs"]}
            continue
        names = [c["name"] for c in _containers(pod.get("spec") or {})]
        chunks, errors = [], []
        for container in names:
            try:
                chunks.append(pod_log(kube, ns, name, container, options["log_limit_bytes"]))
            except KubeError as exc:
                errors.append("%s: %s" % (container, exc))
        entry = {"why": why, "command": "kubectl logs -n %s %s --all-containers" % (ns, name),
                 "containers": names}
        if errors:
            entry["errors"] = errors
        if chunks and len(errors) < len(names):
            files[rel] = b"".join(chunks)
            entry["status"] = "collected"
            if not files[rel] and not (pod.get("spec") or {}).get("nodeName"):
                entry["note"] = "empty: the Pod is on no node (not scheduled), so it has no log yet"
        else:
            entry["status"] = "failed"
            entry["reason"] = "; ".join(errors) or "the Pod has no containers"
        index[rel] = entry


# -------------------------------------------------------------------------- the node side
def _tail(data, limit):
    if limit and len(data) > limit:
        cut = data[-limit:]
        return cut[cut.find(b"\n") + 1:] if b"\n" in cut else cut, True
    return data, False


def collect_node(options):
    """{'files': {name: bytes}, 'index': {name: entry}} of this node (names as in NODE_FILES)."""
    files, index = {}, {}
    timeout, limit = options["timeout"], options["max_bytes"]

    def text(out):
        return out.decode("utf-8", "replace").strip()[-2000:]

    def record(name, argv, rc, out, err, keep_on_failure=False, ok_rcs=(0,)):
        entry = {"command": " ".join(argv)}
        if rc is None:
            entry.update(status="failed", reason="could not run: " + text(err))
        elif rc in ok_rcs or keep_on_failure:
            data, cut = _tail(out, limit)
            files[name] = data
            entry.update(status="collected", rc=rc)
            if cut:
                entry["truncated_to_bytes"] = limit
            if rc not in ok_rcs:
                entry["reason"] = "exit %s (kept: the command's words are the evidence)" % rc
        else:
            entry.update(status="failed", rc=rc, output=text(out + b"\n" + err),
                         reason="exit %s: %s" % (rc, (text(err) or text(out)).splitlines()[0]
                                                 if (text(err) or text(out)) else "no output"))
        index[name] = entry

    def missing(name, reason):
        index[name] = {"status": "missing", "reason": reason}

    # nvidia-smi: PATH, or the GPU Operator's driver root (chroot)
    located = nvidia_smi.locate(options["nvidia_smi"], options["driver_root"])
    smi = located[1] if located else None
    if smi is None:
        why = "%s not installed (not on PATH, not under %s)" % (options["nvidia_smi"], options["driver_root"] or "-")
        for name in ("nvidia-smi.txt", "nvidia-smi-query.csv", "mig-lgip.txt", "mig-lgipp.txt"):
            missing(name, why)
    else:
        rc, out, err = node_commands.run(smi, timeout, merge=True)[:3]
        record("nvidia-smi.txt", smi, rc, out, err, keep_on_failure=True)
        argv = smi + nvidia_smi.GPU_QUERY
        record("nvidia-smi-query.csv", argv, *node_commands.run(argv, timeout)[:3])
        if rc == 0:
            for name, flag in (("mig-lgip.txt", "-lgip"), ("mig-lgipp.txt", "-lgipp")):
                argv = smi + ["mig", flag]
                record(name, argv, *node_commands.run(argv, timeout, merge=True)[:3])
        else:
            for name in ("mig-lgip.txt", "mig-lgipp.txt"):
                index[name] = {"status": "skipped", "reason": "nvidia-smi failed (exit %s)" % rc}

    crictl = node_commands.which(options["crictl"])
    if crictl is None:
        missing("crictl-info.json", "%s not installed" % options["crictl"])
    else:
        argv = [crictl] + (["--runtime-endpoint", options["crictl_endpoint"]] if options["crictl_endpoint"] else []) \
            + ["info"]
        record("crictl-info.json", argv, *node_commands.run(argv, timeout)[:3])

    containerd = node_commands.which(options["containerd"])
    if containerd is None:
        missing("containerd-config-dump.toml", "%s not installed" % options["containerd"])
    else:
        argv = [containerd] + (["--config", options["containerd_config"]] if options["containerd_config"] else []) \
            + ["config", "dump"]
        record("containerd-config-dump.toml", argv, *node_commands.run(argv, timeout)[:3])

    journalctl = node_commands.which("journalctl")
    for name, path, unit in (("containerd.log", options["containerd_log"], options["containerd_unit"]),
                             ("kubelet.log", options["kubelet_log"], options["kubelet_unit"])):
        if path:
            try:
                data = node_commands.read_tail(path, limit + 1 if limit else 0)
            except OSError as exc:
                missing(name, "cannot read %s: %s" % (path, exc.strerror or exc))
                continue
            files[name], cut = _tail(data, limit)
            index[name] = {"status": "collected", "source": path}
            if cut:
                index[name]["truncated_to_bytes"] = limit
        elif unit and journalctl:
            argv = [journalctl, "-u", unit, "-b", "--no-pager", "-o", "short-iso"]
            rc, out, err = node_commands.run(argv, timeout)[:3]
            if rc == 0 and (b"-- No entries --" in out or not out.strip()):
                missing(name, "journalctl has no entries for unit %s in this boot" % unit)
            else:
                record(name, argv, rc, out, err)
        else:
            missing(name, "no log path given and no journalctl" if unit else "no log path or unit given")

    folder = options["socket_dir"]
    if os.path.isdir(folder):
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            index["device-plugins.txt"] = {"status": "failed", "reason": "ls %s: %s" % (folder, exc.strerror)}
        else:
            files["device-plugins.txt"] = "".join(n + "\n" for n in names).encode()
            index["device-plugins.txt"] = {"status": "collected", "command": "ls -1 " + folder}
    else:
        missing("device-plugins.txt", "no folder %s (no kubelet device-plugin folder here)" % folder)

    dmesg = node_commands.which("dmesg")
    done = False
    if dmesg:
        rc, out, err = node_commands.run([dmesg], timeout)[:3]
        if rc == 0:
            record("dmesg.txt", [dmesg], rc, out, err)
            done = True
        else:
            first = {"command": dmesg, "rc": rc, "output": text(err or out)}
    if not done and journalctl:
        argv = [journalctl, "-k", "-b", "--no-pager"]
        record("dmesg.txt", argv, *node_commands.run(argv, timeout)[:3])
        if dmesg:
            index["dmesg.txt"]["dmesg"] = first
    elif not done:
        if dmesg:
            index["dmesg.txt"] = dict(first, status="failed", reason="dmesg: " + first["output"])
        else:
            missing("dmesg.txt", "neither dmesg nor journalctl installed")

    systemctl = node_commands.which("systemctl")
    if systemctl is None:
        missing("fabric-manager.txt", "no systemctl here")
    else:
        argv = [systemctl, "status", "--no-pager", options["fabric_manager_unit"]]
        rc, out, err = node_commands.run(argv, timeout, merge=True)[:3]
        if rc == 4 or (rc is not None and b"could not be found" in out):
            missing("fabric-manager.txt", "unit %s not installed (systemctl status: exit %s)"
                    % (options["fabric_manager_unit"], rc))
        else:
            # 0 active, 3 not running (inactive or failed): the unit's status text is the evidence
            # either way; anything else (1: no systemd to ask) says nothing about the unit
            record("fabric-manager.txt", argv, rc, out, err, ok_rcs=(0, 3))
    return {"files": files, "index": index}


# -------------------------------------------------------------------------- the folder
def existing(dest):
    """None (free: absent or empty), or the earlier bundle's index; BundleError otherwise."""
    if not os.path.lexists(dest):
        return None
    if not os.path.isdir(dest):
        raise BundleError("dest %s exists and is not a folder: give a folder for the bundle" % dest)
    names = os.listdir(dest)
    if not names:
        return None
    if INDEX not in names:
        raise BundleError("dest %s is a non-empty folder without %s (not a support bundle): nothing "
                          "of it is touched; give an empty or new folder" % (dest, INDEX))
    try:
        with open(os.path.join(dest, INDEX), "r", encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as exc:
        raise BundleError("dest %s holds a %s that cannot be read (%s): not a support bundle of "
                          "this tool; give an empty or new folder" % (dest, INDEX, exc))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BundleError("dest %s holds a %s of another format: give an empty or new folder" % (dest, INDEX))
    return doc


def write(dest, files):
    """Write {relpath: bytes} as the folder dest, atomically: built next to it, then renamed in.
    An earlier bundle in dest is replaced as a whole (the caller decided that it may be)."""
    dest = os.path.abspath(dest)
    parent = os.path.dirname(dest)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".%s.partial-" % os.path.basename(dest), dir=parent)
    old = None
    try:
        for rel in sorted(files):
            path = os.path.join(stage, rel)
            if os.path.commonpath([stage, os.path.abspath(path)]) != stage:
                raise BundleError("refusing a bundle file outside the folder: %r" % rel)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(files[rel])
        if os.path.isdir(dest):
            if os.listdir(dest):
                old = tempfile.mkdtemp(prefix=".%s.old-" % os.path.basename(dest), dir=parent)
                os.rename(dest, os.path.join(old, "bundle"))
            else:
                os.rmdir(dest)
        try:
            os.rename(stage, dest)
        except OSError:
            if old:   # put the earlier bundle back
                os.rename(os.path.join(old, "bundle"), dest)
            raise
        stage = None
    finally:
        if stage:
            shutil.rmtree(stage, ignore_errors=True)
        if old:
            shutil.rmtree(old, ignore_errors=True)


# -------------------------------------------------------------------------- the modules' one call
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,252}[A-Za-z0-9])?$")


def redactor(options):
    """The redaction engine with the user's rules (option ``redact``), or BundleError naming the
    bad rule and the fix - called before anything is collected."""
    try:
        return Redactor(options.get("redact"), "redact")
    except RedactError as exc:
        raise BundleError("%s (the role's gpu_support_bundle_redact); nothing was collected" % exc.message)


def node_result(options):
    """gpu_bundle_node's result: this node's index and files (base64, to travel as JSON), both
    redacted here on the node, and what was hidden (redactions: files {name: {rule: n}}, index)."""
    engine = redactor(options)
    found = collect_node(options)
    node = options.get("node_name") or ""
    report = {"files": {}, "index": {}}
    files = {}
    for name, data in sorted(found["files"].items()):
        files[name], counts, note = engine.file("nodes/%s/%s" % (node, name) if node else name, data)
        if counts:
            report["files"][name] = counts
        if note:
            found["index"][name]["redaction_note"] = note

    def hit(rule, count=1):
        report["index"][rule] = report["index"].get(rule, 0) + count

    index = engine.json_doc(found["index"], hit, "bundle.json")
    return {"changed": False, "index": index, "redactions": report,
            "files": {k: base64.b64encode(v).decode("ascii") for k, v in files.items()}}


def check_options(p):
    """BundleError naming the first of gpu_bundle_collect's options that cannot be used; the
    redaction engine with the user's rules when they all can."""
    engine = redactor(p)
    for ref in p["pods"]:
        ns, sep, name = ref.partition("/")
        if not sep or not _NAME.match(ns) or not _NAME.match(name):
            raise BundleError("pods: %r is not NAMESPACE/NAME (e.g. gpu-drill/cuda-drill)" % (ref,))
    for name, result in p["nodes"].items():
        if not _NAME.match(name):
            raise BundleError("nodes: %r is not a node name" % (name,))
        if not isinstance(result, dict) or not (("files" in result and "index" in result) or "msg" in result):
            raise BundleError("nodes[%s]: give what gpu_bundle_node returned there (files and index), "
                              "or msg when its collection failed" % name)
    for selector in p["stack_selectors"]:
        parse_selector(selector)
    return engine


def add_nodes(nodes, files, index, red=None):
    """The node sides (gpu_bundle_node's results by node name) into files and index; what the
    node's own redaction hid into red."""
    for node, result in sorted(nodes.items()):
        if "msg" in result and "files" not in result:
            index["nodes/%s/" % node] = {"status": "failed", "reason": "the node side failed: %s" % result["msg"]}
            continue
        report = result.get("redactions") or {}
        if red is not None and isinstance(report, dict):
            for name, counts in (report.get("files") or {}).items():
                red.add("nodes/%s/%s" % (node, name), counts if isinstance(counts, dict) else {})
            red.add(INDEX, report.get("index") if isinstance(report.get("index"), dict) else {})
        for name, entry in (result.get("index") or {}).items():
            index["nodes/%s/%s" % (node, name)] = entry
        for name, data in (result.get("files") or {}).items():
            if "/" in name or name.startswith("."):
                raise BundleError("nodes[%s].files: %r is not a file name" % (node, name))
            try:
                files["nodes/%s/%s" % (node, name)] = base64.b64decode(data, validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise BundleError("nodes[%s].files[%s] is not base64 (give what gpu_bundle_node returned)"
                                  % (node, name))


def collect_bundle(p, check_mode):
    """gpu_bundle_collect's result for its options `p`: an earlier bundle kept (without
    force), or the cluster and node sides collected and written (unless check_mode)."""
    from ansible.module_utils.kube.client import client
    dest = p["dest"]
    engine = check_options(p)
    earlier = existing(dest)
    archive = archive_path(dest) if p.get("archive") else None
    if archive:
        bundle_archive.check_target(archive, replace=p["force"] or earlier is not None)
    if earlier is not None and not p["force"]:
        files = sorted(earlier.get("files") or {})
        return dict(changed=False, kept=True, dest=dest, missing=[], archive=None,
                    files=[f for f in files if earlier["files"][f].get("status") == "collected"],
                    msg="%s already holds a support bundle (collected %s): kept as it is%s; give "
                    "another dest, or force (-e force=true) to replace it"
                    % (dest, earlier.get("collected_at", "at an unknown time"),
                       (" (and %s)" % archive if os.path.isfile(archive) else " (no archive of it written)")
                       if archive else ""))
    if p.get("validate_only"):
        return dict(changed=False, kept=False, dest=dest, files=[], missing=[], archive=None,
                    msg="options checked: %d redaction rules of yours besides the built-in ones; %s %s"
                    % (len(engine.rules), dest, "holds a bundle that force replaces" if earlier is not None
                       else "is free for the bundle"))
    kube = client(p["kubeconfig"], p["context"])
    files, index, red = {}, {}, Redactions()
    collect_cluster(kube, p, files, index, red)
    add_nodes(p["nodes"], files, index, red)
    doc = {"format": FORMAT, "version": FORMAT_VERSION, "collected_at": now(),
           "collector": "gpu_bundle_collect (gpu-incident-lab)", "server": kube.conf["server"],
           "context": p["context"], "nodes": sorted(p["nodes"]),
           "files": dict(sorted(index.items()))}
    doc = redact_bundle(engine, files, doc, red)
    files[INDEX] = dumps(doc)
    index = doc["files"]
    missing = [dict(file=rel, status=e.get("status"), reason=e.get("reason", ""))
               for rel, e in sorted(index.items()) if e.get("status") != "collected"]
    names = sorted(files)
    values, with_values = red.totals()
    summary = "%d values hidden in %d files (which rule hid how many, per file: %s, redactions)" % (
        values, with_values, os.path.join(dest, INDEX))
    diff = {"before": {"path": dest, "bundle": (earlier or {}).get("collected_at", "none")},
            "after": {"path": dest, "files": names}}
    if not check_mode:
        try:
            write(dest, files)
        except (OSError, BundleError) as exc:
            raise BundleError("cannot write the bundle to %s: %s" % (dest, getattr(exc, "strerror", None) or exc))
        if archive:
            try:
                bundle_archive.write(archive, files, os.path.basename(os.path.abspath(dest)), doc["collected_at"])
            except (OSError, LabError) as exc:
                raise BundleError("the bundle is in %s, but its archive %s could not be written: %s"
                                  % (dest, archive, getattr(exc, "strerror", None) or exc))
    return dict(changed=True, kept=False, dest=dest, files=names, missing=missing, index=doc, diff=diff,
                archive=archive, redacted=summary)


def archive_path(dest):
    """<dest>.tar.gz beside the folder."""
    return os.path.abspath(dest).rstrip(os.sep) + ".tar.gz"


def redact_bundle(engine, files, doc, red):
    """Every file through the engine (changed in files), bundle.json's own words too; returns
    the index document with its ``redactions`` report (per file, which rule hid how many)."""
    for rel in sorted(files):
        files[rel], counts, note = engine.file(rel, files[rel])
        red.add(rel, counts)
        if note:
            red.notes[rel] = note
    counts = {}

    def hit(rule, count=1):
        counts[rule] = counts.get(rule, 0) + count

    doc = engine.json_doc(doc, hit, INDEX)
    red.add(INDEX, counts)
    doc["redactions"] = red.as_dict(engine.describe())
    return doc
