# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the diagnosis reads the cluster and the nodes: one interface, three sources.

- :class:`LiveSource` - the API server (kube/client.py) and node facts gathered on the nodes.
- :class:`BundleSource` (bundle_source.py) - a support bundle folder (the layout of issue 21:
  ``cluster/*.json``, ``logs/<ns>/<pod>.log``, ``nodes/<node>/<artefact>``), as the
  gpu_support_bundle role writes it.
- :class:`MustGatherSource` (must_gather.py) - the folder the GPU Operator's
  ``hack/must-gather.sh`` writes (``gpu_nodes.labels``, ``gpu_nodes.descr``,
  ``gpu_operand_pods.yaml``, ``gpu_operand_pod_<name>.log`` / ``.descr``,
  ``gpu_operand_ds.yaml``, ``cluster_policy.yaml``, ``nvidia-bug-report_<node>.log.gz``).

This file holds the interface (Source), the live source and what both folder sources read
files with. The layers (walk.Diagnosis) ask every source the same questions; what a source cannot
answer raises :class:`Unreadable`, and the layer it feeds becomes ``skipped``/``unknown`` with
the reason. No rule of judgment lives here.
"""

import json

from ansible.module_utils.kube.label_selector import SelectorError, label_selector
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
    """A label selector (kube/label_selector.py) as a predicate on labels; DiagnoseError naming
    `option` for a term it cannot read."""
    try:
        return label_selector(text, option)
    except SelectorError as exc:
        raise DiagnoseError(exc.message)


def object_name(obj):
    return (obj.get("metadata") or {}).get("name")


def object_namespace(obj):
    return (obj.get("metadata") or {}).get("namespace")


class Source(object):
    """The questions the layers ask. Each may raise Unreadable."""
    kind = "source"
    # pod_log(ns, name, [container]) gives that container's log alone (a live cluster); a
    # folder holds the Pod's containers in one file (kubectl logs --all-containers)
    per_container_logs = False

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

    def pod_log(self, namespace, name, containers=None, previous=False):
        """The Pod's log (its containers', or those named); previous: their last ended
        instance's (kubectl logs --previous), where the source keeps one."""
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

    def resourceclaim(self, namespace, name):
        """A ResourceClaim (resource.k8s.io/v1), or None when it does not exist; Unreadable."""
        raise Unreadable("this source holds no ResourceClaims")

    def resourceslices(self):
        """Every ResourceSlice (resource.k8s.io/v1), or Unreadable."""
        raise Unreadable("this source holds no ResourceSlices")

    def ref_claim(self, namespace, name):
        return "ResourceClaim %s/%s" % (namespace, name)

    def ref_slices(self):
        return "ResourceSlices"

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
    per_container_logs = True

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

    def pod_log(self, namespace, name, containers=None, previous=False):
        out = []
        for container in containers or [None]:
            params = {"tailLines": self.log_lines}
            if container:
                params["container"] = container
            if previous:
                params["previous"] = "true"
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

    def resourceclaim(self, namespace, name):
        return self.kube.get("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (namespace, name),
                             missing_ok=True)

    def resourceslices(self):
        try:
            return self.kube.items("/apis/resource.k8s.io/v1/resourceslices")
        except LabError as exc:   # a cluster that does not serve resource.k8s.io/v1
            raise Unreadable("GET /apis/resource.k8s.io/v1/resourceslices: %s" % exc)

    def ref_claim(self, namespace, name):
        return "GET /apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (namespace, name)

    def ref_slices(self):
        return "GET /apis/resource.k8s.io/v1/resourceslices"

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


# ------------------------------------------------------------------ reading a folder source
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
                not object_name(item):
            raise DiagnoseError("%s: items[%d] is not a %s (no metadata.name)" % (shown, number, kind))
    return items
