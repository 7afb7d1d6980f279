# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A support bundle's cluster half: which Pods and ConfigMaps belong to the GPU stack, what of
each object is hidden before it is written (env values, ConfigMap data outside the stack,
last-applied copies, managedFields), and the collection through the API (collect_cluster)."""

import json

from ansible.module_utils.bundle.contents import CLUSTER_FILES, LAST_APPLIED, REDACTED, BundleError
from ansible.module_utils.bundle.layout import KIND_FILES, LOGS, log_file
from ansible.module_utils.kube.label_selector import SelectorError, label_selector


def parse_selector(text):
    """A label selector (k=v, k!=v, k, !k, k in (a,b)) as a predicate on labels (kube/label_selector.py,
    as the diagnosis reads it); BundleError for an empty or unreadable one."""
    if not str(text).strip(" ,"):
        raise BundleError("empty label selector %r: give key=value, key or !key" % (text,))
    try:
        return label_selector(str(text), "stack_selectors")
    except SelectorError as exc:
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
    for kind in ("Node", "Pod", "RuntimeClass", "Event", "DaemonSet", "ResourceClaim", "ResourceSlice", "DeviceClass"):
        for obj in listed.get(kind) or []:
            redact(kind, obj, red)
    for rel, _path, api_version, kind, _command in CLUSTER_FILES:
        if kind in listed:
            files[rel] = dumps(as_list(listed[kind], api_version, kind))

    if not options["logs"]:
        index[LOGS] = {"status": "skipped", "reason": "logs: false"}
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
        rel = log_file(ns, name)
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
