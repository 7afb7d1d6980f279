# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the diagnosis reads the cluster and the nodes: one interface, three sources.

- :class:`LiveSource` - the API server (lab_kube) and node facts gathered on the nodes.
- :class:`BundleSource` - a support bundle folder (the layout of issue 21: ``cluster/*.json``,
  ``logs/<ns>/<pod>.log``, ``nodes/<node>/<artefact>``), as the gpu_support_bundle role writes it.
- :class:`MustGatherSource` - the folder the GPU Operator's ``hack/must-gather.sh`` writes
  (``gpu_nodes.labels``, ``gpu_nodes.descr``, ``gpu_operand_pods.yaml``,
  ``gpu_operand_pod_<name>.log`` / ``.descr``, ``gpu_operand_ds.yaml``, ``cluster_policy.yaml``,
  ``nvidia-bug-report_<node>.log.gz``).

The layers (gpu_layers.Diagnosis) ask every source the same questions; what a source cannot
answer raises :class:`Unreadable`, and the layer it feeds becomes ``skipped``/``unknown`` with
the reason. No rule of judgment lives here.
"""

import gzip
import json
import os
import re

from ansible.module_utils.diagnosis.artefacts import (
    ARTEFACTS, ArtefactError, facts_from_artefacts, kernel_nvrm_lines, smi_failure)
from ansible.module_utils.lab.refusals import LabError


class DiagnoseError(LabError):
    def __init__(self, message):
        self.message = message
        super().__init__(message)


class Unreadable(LabError):
    """The source does not hold this: `why` says what is missing."""

    def __init__(self, why):
        self.why = why
        super().__init__(why)


def parse_selector(text, option="device_plugin_selector"):
    """A label selector string (a=b,c!=d,e,!f, g in (x,y)) as a predicate on labels;
    DiagnoseError naming `option` for a term it cannot read."""
    if not text:
        return lambda labels: True
    terms = []
    for part in re.split(r",(?![^()]*\))", text):
        part = part.strip()
        match = re.fullmatch(r"([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)", part)
        if match:
            values = {v.strip() for v in match.group(3).split(",")}
            terms.append((match.group(1), match.group(2), values))
        elif re.fullmatch(r"[\w./-]+\s*!=\s*[\w.-]*", part):
            key, value = part.split("!=", 1)
            terms.append((key.strip(), "notin", {value.strip()}))
        elif re.fullmatch(r"[\w./-]+\s*==?\s*[\w.-]*", part):
            key, value = part.replace("==", "=").split("=", 1)
            terms.append((key.strip(), "in", {value.strip()}))
        elif re.fullmatch(r"![\w./-]+", part):
            terms.append((part[1:].strip(), "absent", None))
        elif re.fullmatch(r"[\w./-]+", part):
            terms.append((part, "exists", None))
        else:
            raise DiagnoseError("%s %r: cannot read %r as a label selector term (key=value, "
                                "key!=value, key, !key, key in (a,b))" % (option, text, part))

    def match(labels):
        for key, op, values in terms:
            if op == "in" and labels.get(key) not in values:
                return False
            if op == "notin" and labels.get(key) in values:
                return False
            if op == "exists" and key not in labels:
                return False
            if op == "absent" and key in labels:
                return False
        return True
    return match


def _name(obj):
    return (obj.get("metadata") or {}).get("name")


def _ns(obj):
    return (obj.get("metadata") or {}).get("namespace")


class Source(object):
    """The questions the layers ask. Each may raise Unreadable."""
    kind = "source"

    def nodes(self):
        raise NotImplementedError

    def pod(self, namespace, name):
        """The Pod, or None when it does not exist."""
        raise NotImplementedError

    def pods(self, selector=None, namespace=None):
        raise NotImplementedError

    def runtimeclass(self, name):
        """The RuntimeClass, or None when it does not exist."""
        raise NotImplementedError

    def events(self, namespace, name):
        raise NotImplementedError

    def pod_log(self, namespace, name, containers=None):
        raise NotImplementedError

    def facts(self, node):
        raise NotImplementedError

    def missing_reason(self, node, name):
        """Why the source lacks a node artefact (a bundle's bundle.json says), or None."""
        return None

    def kubelet_log(self, node):
        """The node's kubelet log text (a bundle's nodes/<node>/kubelet.log), or Unreadable."""
        raise Unreadable("no kubelet log in this source")

    def daemonsets(self):
        """All DaemonSets, or Unreadable."""
        raise Unreadable("no DaemonSets in this source")

    def ref_daemonsets(self):
        return "DaemonSets"

    def limits(self):
        """What this kind of source cannot hold at all (said once in the result)."""
        return []

    # where each answer came from, for the evidence
    def ref_node(self, name):
        return "node %s" % name

    def ref_pod(self, namespace, name):
        return "Pod %s/%s" % (namespace, name)

    def ref_pods(self, selector, namespace=None):
        return "Pods %s" % selector

    def ref_rc(self, name):
        return "RuntimeClass %s" % name

    def ref_events(self, namespace, name):
        return "events of %s/%s" % (namespace, name)

    def ref_log(self, namespace, name):
        return "log of %s/%s" % (namespace, name)

    def ref_facts(self, node):
        return "node_facts[%s]" % node


# ------------------------------------------------------------------------------------ live
class LiveSource(Source):
    kind = "live"

    def __init__(self, kube, node_facts=None, log_lines=200):
        self.kube = kube
        self.node_facts = node_facts or {}
        self.log_lines = log_lines
        self._nodes = None

    def nodes(self):
        if self._nodes is None:
            self._nodes = {n["metadata"]["name"]: n for n in self.kube.items("/api/v1/nodes")}
        return self._nodes

    def pod(self, namespace, name):
        return self.kube.get("/api/v1/namespaces/%s/pods/%s" % (namespace, name), missing_ok=True)

    def pods(self, selector=None, namespace=None):
        path = ("/api/v1/namespaces/%s/pods" % namespace) if namespace else "/api/v1/pods"
        if selector:
            return self.kube.items(path, labelSelector=selector)
        return self.kube.items(path)

    def runtimeclass(self, name):
        return self.kube.get("/apis/node.k8s.io/v1/runtimeclasses/%s" % name, missing_ok=True)

    def events(self, namespace, name):
        try:
            return self.kube.items("/api/v1/namespaces/%s/events" % namespace,
                                   fieldSelector="involvedObject.name=%s" % name)
        except Exception as exc:  # events are evidence, never a reason to fail the walk
            raise Unreadable("events of %s/%s: %s" % (namespace, name, exc))

    def pod_log(self, namespace, name, containers=None):
        out = []
        for container in containers or [None]:
            params = {"tailLines": self.log_lines}
            if container:
                params["container"] = container
            try:
                raw = self.kube.get_text("/api/v1/namespaces/%s/pods/%s/log" % (namespace, name),
                                         params)
            except LabError:   # a container that has not started has no log
                continue
            if raw:
                out.append(raw.decode("utf-8", "replace"))
        if not out:
            raise Unreadable("no log of %s/%s (its containers have not run)" % (namespace, name))
        return "\n".join(out)

    def facts(self, node):
        return self.node_facts.get(node)

    def daemonsets(self):
        return self.kube.items("/apis/apps/v1/daemonsets")

    def ref_daemonsets(self):
        return "GET /apis/apps/v1/daemonsets"

    def ref_node(self, name):
        return "GET /api/v1/nodes/%s" % name

    def ref_pod(self, namespace, name):
        return "GET /api/v1/namespaces/%s/pods/%s" % (namespace, name)

    def ref_pods(self, selector, namespace=None):
        base = ("/api/v1/namespaces/%s/pods" % namespace) if namespace else "/api/v1/pods"
        return "GET %s?labelSelector=%s" % (base, selector)

    def ref_rc(self, name):
        return "GET /apis/node.k8s.io/v1/runtimeclasses/%s" % name

    def ref_events(self, namespace, name):
        return "GET /api/v1/namespaces/%s/events?fieldSelector=involvedObject.name=%s" % (
            namespace, name)

    def ref_log(self, namespace, name):
        return "GET /api/v1/namespaces/%s/pods/%s/log" % (namespace, name)


# ---------------------------------------------------------------------------------- bundle
def read_json_file(path, shown):
    """A JSON file of a bundle, or DiagnoseError naming the file, the line and the fix."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise DiagnoseError("%s is not UTF-8 text; keep it as kubectl printed it" % shown)
    except OSError as exc:
        raise DiagnoseError("cannot read %s: %s" % (shown, exc.strerror or exc))
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DiagnoseError("%s line %s column %s: not JSON (%s); collect it again with "
                            "`kubectl get ... -o json`" % (shown, getattr(exc, "lineno", "?"),
                                                           getattr(exc, "colno", "?"),
                                                           getattr(exc, "msg", exc)))


def read_text_file(path, shown, limit=4 * 1024 * 1024):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            raw = handle.read()
    except OSError as exc:
        raise DiagnoseError("cannot read %s: %s" % (shown, exc.strerror or exc))
    return raw.decode("utf-8", "replace")


def list_items(doc, shown, kind):
    """The items of a `kubectl get -o json` List (or a single object)."""
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        items = doc["items"]
    elif isinstance(doc, dict) and doc.get("kind") == kind:
        items = [doc]
    elif isinstance(doc, list):
        items = doc
    else:
        raise DiagnoseError("%s: expected the List that `kubectl get %ss -o json` prints (an "
                            "object with items), got %s" % (shown, kind.lower(), type(doc).__name__))
    for number, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict) or \
                not _name(item):
            raise DiagnoseError("%s: items[%d] is not a %s (no metadata.name)" % (shown, number, kind))
    return items


def bundle_node_facts(folder, resources=None, index=None):
    """Node facts from one ``nodes/<node>/`` folder of a bundle (the same parsers as live).

    `index`: this node's entries of the bundle's bundle.json ({file name: entry}); a command
    that ran and failed has no file but its entry keeps its exit code and output - nvidia-smi's
    and crictl's failure words are facts too (driver_error, cri_error)."""
    files = {}
    smi_rc = None
    for name in ARTEFACTS:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            files[name] = read_text_file(path, path)
            continue
        entry = (index or {}).get(name) or {}
        if entry.get("status") == "failed" and entry.get("output") is not None:
            if name == "nvidia-smi-query.csv":
                files[name] = entry["output"]
                smi_rc = entry.get("rc") if isinstance(entry.get("rc"), int) else 1
            elif name == "crictl-info.json":
                files[name] = entry["output"] or entry.get("reason") or "crictl info failed"
    try:
        return facts_from_artefacts(files, smi_rc=smi_rc, resources=resources)
    except ArtefactError as exc:
        raise DiagnoseError("%s/%s" % (folder, exc.message))


class BundleSource(Source):
    """A support bundle folder: ``cluster/``, ``logs/``, ``nodes/`` (issue 21 layout)."""
    kind = "bundle"

    def __init__(self, root, node_facts=None, resources=None):
        self.root = root
        self.extra = node_facts or {}
        self.resources = resources
        self._cache = {}

    def _list(self, name, kind):
        if name not in self._cache:
            path = os.path.join(self.root, "cluster", name)
            if not os.path.isfile(path):
                self._cache[name] = None
            else:
                shown = os.path.join(self.root, "cluster", name)
                self._cache[name] = list_items(read_json_file(path, shown), shown, kind)
        if self._cache[name] is None:
            raise Unreadable("the bundle has no cluster/%s" % name)
        return self._cache[name]

    def nodes(self):
        return {_name(n): n for n in self._list("nodes.json", "Node")}

    def pod(self, namespace, name):
        for pod in self._list("pods.json", "Pod"):
            if _name(pod) == name and _ns(pod) == namespace:
                return pod
        return None

    def pods(self, selector=None, namespace=None):
        match = parse_selector(selector)
        return [p for p in self._list("pods.json", "Pod")
                if (namespace is None or _ns(p) == namespace)
                and match((p.get("metadata") or {}).get("labels") or {})]

    def runtimeclass(self, name):
        for rc in self._list("runtimeclasses.json", "RuntimeClass"):
            if _name(rc) == name:
                return rc
        return None

    def events(self, namespace, name):
        return [e for e in self._list("events.json", "Event")
                if (e.get("involvedObject") or {}).get("name") == name
                and (e.get("involvedObject") or {}).get("namespace", namespace) == namespace]

    def pod_log(self, namespace, name, containers=None):
        path = os.path.join(self.root, "logs", namespace, name + ".log")
        if not os.path.isfile(path):
            raise Unreadable("the bundle has no logs/%s/%s.log" % (namespace, name))
        return read_text_file(path, path)

    def index(self):
        """bundle.json's files entries (what was collected, what is missing and why), or {}."""
        if "bundle.json" not in self._cache:
            path = os.path.join(self.root, "bundle.json")
            doc = read_json_file(path, path) if os.path.isfile(path) else {}
            files = doc.get("files") if isinstance(doc, dict) else None
            self._cache["bundle.json"] = files if isinstance(files, dict) else {}
        return self._cache["bundle.json"]

    def missing_reason(self, node, name):
        entry = self.index().get("nodes/%s/%s" % (node, name)) or self.index().get("nodes/%s/" % node)
        if isinstance(entry, dict) and entry.get("status") != "collected":
            return "%s: %s" % (entry.get("status"), entry.get("reason", ""))
        return None

    def facts(self, node):
        folder = os.path.join(self.root, "nodes", node)
        prefix = "nodes/%s/" % node
        index = {k[len(prefix):]: v for k, v in self.index().items() if k.startswith(prefix)}
        found = bundle_node_facts(folder, self.resources, index) \
            if os.path.isdir(folder) or index else None
        if node in self.extra:
            found = dict(found or {}, **self.extra[node])
        return found

    def daemonsets(self):
        return self._list("daemonsets.json", "DaemonSet")

    def ref_daemonsets(self):
        return "cluster/daemonsets.json"

    def kubelet_log(self, node):
        path = os.path.join(self.root, "nodes", node, "kubelet.log")
        if not os.path.isfile(path):
            raise Unreadable("the bundle has no nodes/%s/kubelet.log" % node)
        return read_text_file(path, path, limit=1024 * 1024)

    def ref_node(self, name):
        return "cluster/nodes.json [%s]" % name

    def ref_pod(self, namespace, name):
        return "cluster/pods.json [%s/%s]" % (namespace, name)

    def ref_pods(self, selector, namespace=None):
        return "cluster/pods.json (labels %s%s)" % (selector, " in %s" % namespace if namespace else "")

    def ref_rc(self, name):
        return "cluster/runtimeclasses.json [%s]" % name

    def ref_events(self, namespace, name):
        return "cluster/events.json (involvedObject %s/%s)" % (namespace, name)

    def ref_log(self, namespace, name):
        return "logs/%s/%s.log" % (namespace, name)

    def ref_facts(self, node):
        return "nodes/%s/" % node


# ----------------------------------------------------------------------------- must-gather
MUST_GATHER_FILES = ("gpu_operand_pods.yaml", "gpu_nodes.descr", "gpu_nodes.labels",
                     "gpu_operand_ds.yaml", "cluster_policy.yaml")


def is_must_gather(root):
    return any(os.path.isfile(os.path.join(root, f)) for f in MUST_GATHER_FILES) and \
        not os.path.isdir(os.path.join(root, "cluster"))


def parse_node_labels(text):
    """must-gather's gpu_nodes.labels: a node name line, then `- key=value` lines, per node."""
    nodes, current = {}, None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("- "):
            if current is None:
                continue
            key, _sep, value = stripped[2:].partition("=")
            nodes[current][key.strip()] = value.strip()
        else:
            current = stripped
            nodes.setdefault(current, {})
    return nodes


def parse_describe_nodes(text):
    """`kubectl describe nodes` text as Node-shaped dicts (labels, taints, unschedulable,
    Ready, capacity, allocatable) - what must-gather's gpu_nodes.descr holds."""
    nodes = {}
    for block in re.split(r"(?m)^(?=Name:\s)", text or ""):
        match = re.match(r"Name:\s+(\S+)", block)
        if not match:
            continue
        name = match.group(1)
        node = {"metadata": {"name": name, "labels": {}}, "spec": {},
                "status": {"capacity": {}, "allocatable": {}, "conditions": []}}
        section = None
        for line in block.splitlines()[1:]:
            head = re.match(r"^([A-Z][\w ]*):\s*(.*)$", line)
            if head:
                section, rest = head.group(1), head.group(2).strip()
                if section == "Labels" and "=" in rest:
                    key, _s, value = rest.partition("=")
                    node["metadata"]["labels"][key] = value
                elif section == "Taints" and rest and rest != "<none>":
                    node["spec"]["taints"] = [_taint(rest)]
                elif section == "Unschedulable":
                    node["spec"]["unschedulable"] = rest == "true"
                continue
            stripped = line.strip()
            if not stripped:
                continue
            if section == "Labels" and "=" in stripped and line.startswith(" "):
                key, _s, value = stripped.partition("=")
                node["metadata"]["labels"][key] = value
            elif section == "Taints" and line.startswith(" "):
                node["spec"].setdefault("taints", []).append(_taint(stripped))
            elif section in ("Capacity", "Allocatable"):
                key, _s, value = stripped.partition(":")
                node["status"][section.lower()][key.strip()] = value.strip()
            elif section == "Conditions":
                cells = stripped.split()
                if len(cells) >= 2 and cells[0] in ("Ready", "MemoryPressure", "DiskPressure",
                                                    "PIDPressure", "NetworkUnavailable"):
                    node["status"]["conditions"].append({"type": cells[0], "status": cells[1]})
        nodes[name] = node
    return nodes


def _taint(text):
    key_value, _s, effect = text.rpartition(":")
    key, _s, value = key_value.partition("=")
    return {"key": key, "value": value, "effect": effect}


def parse_describe_events(text):
    """The Events table of a `kubectl describe` text as Event-shaped dicts."""
    events = []
    part = (text or "").split("\nEvents:", 1)
    if len(part) < 2:
        return events
    for line in part[1].splitlines():
        match = re.match(r"\s+(Normal|Warning)\s+(\S+)\s+(.+?)\s{2,}(\S.*?)\s{2,}(.*)$", line)
        if match:
            events.append({"type": match.group(1), "reason": match.group(2),
                           "source": {"component": match.group(4)}, "message": match.group(5)})
    return events


def bug_report_facts(text):
    """What nvidia-bug-report.sh's log tells of the node: the kernel's NVRM lines, and from its
    `nvidia-smi --query` section the driver version or nvidia-smi's failure."""
    facts = {}
    facts["kernel_xid"] = kernel_nvrm_lines(text)
    section = None
    match = re.search(r"(?ms)^[^\n]*nvidia-smi --query[^\n]*\n(.*?)(?=^_{10,}|\Z)", text or "")
    if match:
        section = match.group(1)
    if section is not None:
        failure = smi_failure(section)
        version = re.search(r"Driver Version\s*:\s*([0-9][0-9.]+)", section)
        attached = re.search(r"Attached GPUs\s*:\s*(\d+)", section)
        if failure and not attached:
            facts["driver_ok"] = False
            facts["driver_error"] = failure
        elif attached and int(attached.group(1)) > 0:
            facts["driver_ok"] = True
            if version:
                facts["driver_version"] = version.group(1)
    return facts


class MustGatherSource(Source):
    """The GPU Operator's must-gather.sh folder. It has the Operator's own Pods and
    DaemonSets, the GPU nodes (described and labelled), their logs and the driver container's
    nvidia-bug-report - no RuntimeClasses, no crictl/containerd state, no workload Pods."""
    kind = "must-gather"

    def __init__(self, root, node_facts=None):
        self.root = root
        self.extra = node_facts or {}
        self._nodes = None
        self._pods = None

    def _path(self, name):
        return os.path.join(self.root, name)

    def nodes(self):
        if self._nodes is None:
            descr = self._path("gpu_nodes.descr")
            labels = self._path("gpu_nodes.labels")
            if not os.path.isfile(descr) and not os.path.isfile(labels):
                raise Unreadable("the must-gather has neither gpu_nodes.descr nor gpu_nodes.labels")
            nodes = parse_describe_nodes(read_text_file(descr, descr)) if os.path.isfile(descr) else {}
            if os.path.isfile(labels):
                for name, found in parse_node_labels(read_text_file(labels, labels)).items():
                    node = nodes.setdefault(name, {"metadata": {"name": name, "labels": {}},
                                                   "spec": {}, "status": {}})
                    node["metadata"]["labels"].update(found)
            self._nodes = nodes
        return self._nodes

    def _all_pods(self):
        if self._pods is None:
            path = self._path("gpu_operand_pods.yaml")
            if not os.path.isfile(path):
                raise Unreadable("the must-gather has no gpu_operand_pods.yaml")
            try:
                import yaml
            except ImportError:
                raise DiagnoseError("reading %s needs PyYAML" % path)
            try:
                doc = yaml.safe_load(read_text_file(path, path))
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                raise DiagnoseError("%s line %s: not YAML (%s); it is `kubectl get pods -oyaml` "
                                    "output" % (path, mark.line + 1 if mark else "?",
                                                getattr(exc, "problem", exc)))
            self._pods = list_items(doc, path, "Pod")
        return self._pods

    def pod(self, namespace, name):
        for pod in self._all_pods():
            if _name(pod) == name and (_ns(pod) == namespace or namespace is None):
                return pod
        return None

    def pods(self, selector=None, namespace=None):
        match = parse_selector(selector)
        return [p for p in self._all_pods() if (namespace is None or _ns(p) == namespace)
                and match((p.get("metadata") or {}).get("labels") or {})]

    def runtimeclass(self, name):
        raise Unreadable("must-gather.sh does not collect RuntimeClasses")

    def daemonsets(self):
        path = self._path("gpu_operand_ds.yaml")
        if not os.path.isfile(path):
            raise Unreadable("the must-gather has no gpu_operand_ds.yaml")
        import yaml
        try:
            doc = yaml.safe_load(read_text_file(path, path))
        except yaml.YAMLError as exc:
            raise DiagnoseError("%s: not YAML (%s); it is `kubectl get ds -oyaml` output" % (path, exc))
        return list_items(doc, path, "DaemonSet")

    def ref_daemonsets(self):
        return "gpu_operand_ds.yaml"

    def events(self, namespace, name):
        path = self._path("gpu_operand_pod_%s.descr" % name)
        if not os.path.isfile(path):
            raise Unreadable("the must-gather has no gpu_operand_pod_%s.descr" % name)
        return parse_describe_events(read_text_file(path, path))

    def pod_log(self, namespace, name, containers=None):
        path = self._path("gpu_operand_pod_%s.log" % name)
        if not os.path.isfile(path):
            raise Unreadable("the must-gather has no gpu_operand_pod_%s.log" % name)
        return read_text_file(path, path)

    def facts(self, node):
        found = None
        path = self._path("nvidia-bug-report_%s.log.gz" % node)
        if os.path.isfile(path):
            try:
                with gzip.open(path, "rb") as handle:
                    text = handle.read(64 * 1024 * 1024).decode("utf-8", "replace")
            except (OSError, EOFError) as exc:
                raise DiagnoseError("%s is not a readable gzip file (%s); copy it again from the "
                                    "driver container" % (path, exc))
            found = bug_report_facts(text)
        if node in self.extra:
            found = dict(found or {}, **self.extra[node])
        return found

    def missing_reason(self, node, name):
        if name in ("crictl-info.json", "containerd-config-dump.toml"):
            return "must-gather.sh collects neither crictl info nor containerd's config"
        if name.startswith("nvidia-smi"):
            return ("no nvidia-bug-report_%s.log.gz (must-gather.sh takes it from the GPU "
                    "Operator's driver container only)" % node)
        return None

    def limits(self):
        return ["container-runtime: must-gather.sh collects no crictl info, containerd config or "
                "RuntimeClasses - judged only by the error texts of the Operator's Pods",
                "driver: read from nvidia-bug-report_<node>.log.gz, which exists only where the "
                "Operator runs the driver container",
                "workload and scheduling of your own Pods: must-gather holds only the GPU "
                "Operator's Pods (diagnose a node)"]

    def ref_node(self, name):
        return "gpu_nodes.descr/gpu_nodes.labels [%s]" % name

    def ref_pod(self, namespace, name):
        return "gpu_operand_pods.yaml [%s/%s]" % (namespace, name)

    def ref_pods(self, selector, namespace=None):
        return "gpu_operand_pods.yaml (labels %s)" % selector

    def ref_rc(self, name):
        return "(must-gather has no RuntimeClasses) %s" % name

    def ref_events(self, namespace, name):
        return "gpu_operand_pod_%s.descr Events" % name

    def ref_log(self, namespace, name):
        return "gpu_operand_pod_%s.log" % name

    def ref_facts(self, node):
        return "nvidia-bug-report_%s.log.gz" % node


def open_bundle(root, node_facts=None, resources=None):
    """A BundleSource or MustGatherSource for the folder, or DiagnoseError saying why not."""
    if not os.path.isdir(root):
        raise DiagnoseError("bundle %s is not a folder; give the folder the support bundle (or "
                            "the GPU Operator's must-gather) was unpacked to" % root)
    if os.path.isdir(os.path.join(root, "cluster")) or os.path.isdir(os.path.join(root, "nodes")):
        return BundleSource(root, node_facts, resources)
    if is_must_gather(root):
        return MustGatherSource(root, node_facts)
    raise DiagnoseError("bundle %s has neither cluster/ and nodes/ (a gpu_support_bundle "
                        "folder) nor must-gather.sh's files (%s)" % (root, ", ".join(MUST_GATHER_FILES)))
