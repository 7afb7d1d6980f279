# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A support bundle folder as a diagnosis source (the layout of issue 21, as the gpu_support_bundle
role writes it), and open_bundle: that or a must-gather folder, by what the folder holds."""

import os

from ansible.module_utils.node.artefacts import ARTEFACTS, ArtefactError, facts_from_artefacts, node_texts
from ansible.module_utils.diagnosis.must_gather import MUST_GATHER_FILES, MustGatherSource, is_must_gather
from ansible.module_utils.diagnosis.sources import (
    DiagnoseError, Source, Unreadable, list_items, object_name, object_namespace, parse_selector,
    read_json_file, read_text_file)


def bundle_node_facts(folder, resources=None, index=None):
    """Node facts from one ``nodes/<node>/`` folder of a bundle (the same parsers as live).

    `index`: this node's entries of the bundle's bundle.json ({file name: entry}); a command
    that ran and failed has no file but its entry keeps its exit code and output - nvidia-smi's
    and crictl's failure words are facts too (driver_error, cri_error)."""
    files = {}
    for name in ARTEFACTS:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            files[name] = read_text_file(path, path)
    files, smi_rc = node_texts(files, index)
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
        return {object_name(n): n for n in self._list("nodes.json", "Node")}

    def pod(self, namespace, name):
        for pod in self._list("pods.json", "Pod"):
            if object_name(pod) == name and object_namespace(pod) == namespace:
                return pod
        return None

    def pods(self, selector=None, namespace=None):
        match = parse_selector(selector)
        return [p for p in self._list("pods.json", "Pod")
                if (namespace is None or object_namespace(p) == namespace)
                and match((p.get("metadata") or {}).get("labels") or {})]

    def runtimeclass(self, name):
        for rc in self._list("runtimeclasses.json", "RuntimeClass"):
            if object_name(rc) == name:
                return rc
        return None

    def events(self, namespace, name):
        return [e for e in self._list("events.json", "Event")
                if (e.get("involvedObject") or {}).get("name") == name
                and (e.get("involvedObject") or {}).get("namespace", namespace) == namespace]

    def pod_log(self, namespace, name, containers=None, previous=False):
        if previous:
            raise Unreadable("a bundle keeps each Pod's current log only")
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
