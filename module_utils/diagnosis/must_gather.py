# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The folder the GPU Operator's ``hack/must-gather.sh`` writes, as a diagnosis source: its node
labels and descriptions, events, the driver container's nvidia-bug-report - read into what the
layers ask every source."""

import gzip
import os
import re

from ansible.module_utils.bundle.layout import CLUSTER
from ansible.module_utils.node.artefacts import kernel_nvrm_lines, smi_failure
from ansible.module_utils.diagnosis.sources import (
    DiagnoseError, Source, Unreadable, list_items, object_name, object_namespace, parse_selector,
    read_text_file)


MUST_GATHER_FILES = ("gpu_operand_pods.yaml", "gpu_nodes.descr", "gpu_nodes.labels",
                     "gpu_operand_ds.yaml", "cluster_policy.yaml")


def is_must_gather(root):
    return any(os.path.isfile(os.path.join(root, f)) for f in MUST_GATHER_FILES) and \
        not os.path.isdir(os.path.join(root, CLUSTER))


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
            if object_name(pod) == name and (object_namespace(pod) == namespace or namespace is None):
                return pod
        return None

    def pods(self, selector=None, namespace=None):
        match = parse_selector(selector)
        return [p for p in self._all_pods() if (namespace is None or object_namespace(p) == namespace)
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

    def pod_log(self, namespace, name, containers=None, previous=False):
        if previous:
            raise Unreadable("a must-gather keeps each Pod's current log only")
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
