# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A support bundle folder as a diagnosis source (the layout of issue 21, as the gpu_support_bundle
role writes it - its names are bundle/layout.py's, the one owner), and open_bundle: that or a
must-gather folder, by what the folder holds."""

import os

from ansible.module_utils.bundle.layout import (
    CLUSTER, INDEX, INDEX_FILES, KIND_FILES, NODES, log_file, node_file, node_folder)
from ansible.module_utils.node.artefacts import (
    ARTEFACTS, KUBELET_LOG, ArtefactError, facts_from_artefacts, node_texts)
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

    def _path(self, rel):
        """The bundle's file `rel` (a path in the layout, / separated) on this machine."""
        return os.path.join(self.root, *rel.split("/"))

    def _list(self, kind):
        rel = KIND_FILES[kind]
        if rel not in self._cache:
            path = self._path(rel)
            self._cache[rel] = list_items(read_json_file(path, path), path, kind) if os.path.isfile(path) else None
        if self._cache[rel] is None:
            raise Unreadable("the bundle has no %s" % rel)
        return self._cache[rel]

    def nodes(self):
        return {object_name(n): n for n in self._list("Node")}

    def pod(self, namespace, name):
        for pod in self._list("Pod"):
            if object_name(pod) == name and object_namespace(pod) == namespace:
                return pod
        return None

    def pods(self, selector=None, namespace=None):
        match = parse_selector(selector)
        return [p for p in self._list("Pod")
                if (namespace is None or object_namespace(p) == namespace)
                and match((p.get("metadata") or {}).get("labels") or {})]

    def runtimeclass(self, name):
        for rc in self._list("RuntimeClass"):
            if object_name(rc) == name:
                return rc
        return None

    def events(self, namespace, name):
        return [e for e in self._list("Event")
                if (e.get("involvedObject") or {}).get("name") == name
                and (e.get("involvedObject") or {}).get("namespace", namespace) == namespace]

    def pod_log(self, namespace, name, containers=None, previous=False):
        if previous:
            raise Unreadable("a bundle keeps each Pod's current log only")
        path = self._path(log_file(namespace, name))
        if not os.path.isfile(path):
            raise Unreadable("the bundle has no %s" % log_file(namespace, name))
        return read_text_file(path, path)

    def index(self):
        """bundle.json's files entries (what was collected, what is missing and why), or {}."""
        if INDEX not in self._cache:
            path = self._path(INDEX)
            doc = read_json_file(path, path) if os.path.isfile(path) else {}
            files = doc.get(INDEX_FILES) if isinstance(doc, dict) else None
            self._cache[INDEX] = files if isinstance(files, dict) else {}
        return self._cache[INDEX]

    def missing_reason(self, node, name):
        entry = self.index().get(node_file(node, name)) or self.index().get(node_folder(node))
        if isinstance(entry, dict) and entry.get("status") != "collected":
            return "%s: %s" % (entry.get("status"), entry.get("reason", ""))
        return None

    def facts(self, node):
        folder = os.path.join(self.root, NODES, node)
        prefix = node_folder(node)
        index = {k[len(prefix):]: v for k, v in self.index().items() if k.startswith(prefix)}
        found = bundle_node_facts(folder, self.resources, index) \
            if os.path.isdir(folder) or index else None
        if node in self.extra:
            found = dict(found or {}, **self.extra[node])
        return found

    def daemonsets(self):
        return self._list("DaemonSet")

    def ref_daemonsets(self):
        return KIND_FILES["DaemonSet"]

    def resourceclaim(self, namespace, name):
        for claim in self._list("ResourceClaim"):
            if object_name(claim) == name and object_namespace(claim) == namespace:
                return claim
        return None

    def resourceslices(self):
        return self._list("ResourceSlice")

    def ref_claim(self, namespace, name):
        return "%s [%s/%s]" % (KIND_FILES["ResourceClaim"], namespace, name)

    def ref_slices(self):
        return KIND_FILES["ResourceSlice"]

    def kubelet_log(self, node):
        rel = node_file(node, KUBELET_LOG)
        path = self._path(rel)
        if not os.path.isfile(path):
            raise Unreadable("the bundle has no %s" % rel)
        return read_text_file(path, path, limit=1024 * 1024)

    def ref_node(self, name):
        return "%s [%s]" % (KIND_FILES["Node"], name)

    def ref_pod(self, namespace, name):
        return "%s [%s/%s]" % (KIND_FILES["Pod"], namespace, name)

    def ref_pods(self, selector, namespace=None):
        return "%s (labels %s%s)" % (KIND_FILES["Pod"], selector, " in %s" % namespace if namespace else "")

    def ref_rc(self, name):
        return "%s [%s]" % (KIND_FILES["RuntimeClass"], name)

    def ref_events(self, namespace, name):
        return "%s (involvedObject %s/%s)" % (KIND_FILES["Event"], namespace, name)

    def ref_log(self, namespace, name):
        return log_file(namespace, name)

    def ref_facts(self, node):
        return node_folder(node)


def open_bundle(root, node_facts=None, resources=None):
    """A BundleSource or MustGatherSource for the folder, or DiagnoseError saying why not."""
    if not os.path.isdir(root):
        raise DiagnoseError("bundle %s is not a folder; give the folder the support bundle (or "
                            "the GPU Operator's must-gather) was unpacked to" % root)
    if os.path.isdir(os.path.join(root, CLUSTER)) or os.path.isdir(os.path.join(root, NODES)):
        return BundleSource(root, node_facts, resources)
    if is_must_gather(root):
        return MustGatherSource(root, node_facts)
    raise DiagnoseError("bundle %s has neither %s/ and %s/ (a gpu_support_bundle folder) nor "
                        "must-gather.sh's files (%s)" % (root, CLUSTER, NODES, ", ".join(MUST_GATHER_FILES)))
