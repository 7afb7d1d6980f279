# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The walk: ask the source, judge each candidate node layer by layer, keep the furthest path.

This is the one place the source is asked. For each node the walk reads everything the rules
judge - the node, its facts, the Pod, its RuntimeClass, the device plugin's Pods and
DaemonSets, the events and logs whose texts name a layer, what the source says is missing -
into a :class:`Seen`, and hands it to the six rules in LAYERS order (host_layers,
plugin_layers, pod_layers). No rule reads anything itself.

The node judged is the one the Pod is bound to; for a Pending Pod, each node its nodeSelector
and required node affinity admit (or, when the affinity admits none, its nodeSelector), and
the one whose path reaches furthest - the lowest broken layer highest - is reported.
"""

import re

from ansible.module_utils.diagnosis import dra_layers, host_layers, plugin_layers, pod_layers
from ansible.module_utils.diagnosis.kube_objects import (
    DRIVER_LABELS, PLUGIN_SELECTORS, TOOLKIT_RESTART_LINE, TOOLKIT_SELECTOR, node_admits, plugin_component,
    pod_request)
from ansible.module_utils.diagnosis.sources import (
    DiagnoseError, LiveSource, Source, Unreadable, parse_selector)
from ansible.module_utils.diagnosis.texts import (
    failing, last_error, last_errors, node_findings, pending_pod_findings, pod_findings, wants_log)
from ansible.module_utils.diagnosis.verdict import LAYERS, ev

# the rule of each layer, in the order of LAYERS
RULES = (host_layers.driver, host_layers.container_runtime, plugin_layers.device_plugin,
         plugin_layers.advertisement, pod_layers.scheduling, pod_layers.workload)
# a Pod whose GPU comes by ResourceClaim: the DRA kubelet plugin and the node's ResourceSlices in
# place of the device plugin and node allocatable (dra_layers; the container-runtime rule asks CDI)
DRA_RULES = (host_layers.driver, host_layers.container_runtime, dra_layers.kubelet_plugin,
             dra_layers.slices, pod_layers.scheduling, pod_layers.workload)

# the node artefacts whose absence a rule explains with the source's own words
EXPLAINED = ("nvidia-smi-query.csv", "crictl-info.json")


class Where(object):
    """The source's names for what was read (API paths, bundle files) - names only, no reads."""

    def __init__(self, source):
        self.kind = source.kind
        self.node = source.ref_node
        self.pod = source.ref_pod
        self.pods = source.ref_pods
        self.rc = source.ref_rc
        self.events = source.ref_events
        self.log = source.ref_log
        self.facts = source.ref_facts
        self.daemonsets = source.ref_daemonsets()
        self.claim = source.ref_claim
        self.slices = source.ref_slices


class Seen(object):
    """What the walk read for one node: all that the rules judge.

    node, name, labels: the Node object, its name and labels.
    pod, request: the Pod (or None) and what it requests of the resource (None without one).
    facts: the node facts (a dict, or None when the source holds none for this node).
    texts: the error-text findings (texts.text_findings) of the plugin's Pods, the Pod and
        the node's logs, in that order.
    plugin_pods, other_components: the device plugin's Pods on the node, and the (Pod, what)
        pairs its labels matched that are GPU feature discovery or the MPS daemon;
        plugin_why: why the source holds no Pods (then both are empty), else None.
    daemonsets: the DaemonSets (read only when no plugin Pod runs on the node), or None.
    rc_name, runtimeclass, rc_why: the Pod's runtimeClassName, the RuntimeClass (None: 404),
        and why the source cannot hold it (else None).
    missing: {artefact: the source's reason it lacks it} for EXPLAINED artefacts.
    resource, driver_labels, selectors, dp_namespace: what the diagnosis was asked about.
    where: the source's names for the evidence (Where).
    last_errors: {(namespace, pod): [evidence]} - the last error line each crashing or failed
        container of the plugin's Pods and the Pod printed in its log (texts.last_error).
    toolkit: [(log reference, RUNTIME_RESTART_MODE, its lines about the restart)] of NVIDIA's
        toolkit installer Pods on the node (Diagnosis.toolkit).
    dra: for a Pod that gets its GPU by ResourceClaim, its claims, the node's ResourceSlices and
        the DRA kubelet plugin's Pods there (a dra_layers.Dra); None for any other Pod.
    """

    def __init__(self, **fields):
        self.__dict__.update(fields)


class Diagnosis(object):
    """Diagnosis(source_or_kube, resource, device_plugin_namespace, device_plugin_selector,
    driver_label, node_facts).run(namespace, pod_name, node_name).

    `source_or_kube`: a sources.Source (LiveSource, BundleSource, MustGatherSource) or a
    lab_kube client (wrapped in a LiveSource with `node_facts`). `device_plugin_selector`:
    None = the three labelings of PLUGIN_SELECTORS; a selector = only that one.
    `driver_label`: None = DRIVER_LABELS; a label = that one first."""

    def __init__(self, kube, resource="nvidia.com/gpu", device_plugin_namespace=None,
                 device_plugin_selector=None, driver_label=None, node_facts=None):
        self.src = kube if isinstance(kube, Source) else LiveSource(kube, node_facts)
        self.where = Where(self.src)
        self.resource = resource
        self.dp_namespace = device_plugin_namespace
        self.dp_selectors = [device_plugin_selector] if device_plugin_selector \
            else list(PLUGIN_SELECTORS)
        for selector in self.dp_selectors:
            parse_selector(selector)  # refuse a bad selector before reading anything
        self.driver_labels = [driver_label] + [d for d in DRIVER_LABELS if d != driver_label] \
            if driver_label else list(DRIVER_LABELS)
        self._plugin_pods = None
        self._daemonsets = None
        self.last_errors = {}
        self.pod_logs = {}    # {(namespace, name): the log _pod_texts read} - a claim-based Pod's own words

    # ----------------------------------------------------------------- reads
    def nodes(self):
        try:
            return self.src.nodes()
        except Unreadable as exc:
            raise DiagnoseError("cannot judge any node: %s" % exc.why)

    def facts(self, name):
        facts = self.src.facts(name)
        return facts if isinstance(facts, dict) else None

    def plugin_pods(self):
        """All Pods any plugin selector matches (deduplicated), or Unreadable."""
        if self._plugin_pods is None:
            found, seen = [], set()
            for selector in self.dp_selectors:
                for pod in self.src.pods(selector, self.dp_namespace):
                    key = (pod["metadata"].get("namespace"), pod["metadata"]["name"])
                    if key not in seen:
                        seen.add(key)
                        found.append(pod)
            self._plugin_pods = found
        return self._plugin_pods

    def daemonsets(self):
        """All DaemonSets (read once), or None when the source holds none."""
        if self._daemonsets is None:
            try:
                self._daemonsets = self.src.daemonsets()
            except Unreadable:
                self._daemonsets = False
        return self._daemonsets or None

    def _pod_texts(self, pod, role):
        ns, name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        try:
            events = self.src.events(ns, name)
        except Unreadable:
            events = None
        log = None
        if wants_log(pod):
            containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
            try:
                log = self.src.pod_log(ns, name, containers)
            except Unreadable:
                pass
            # a crashing container's own last words (each container's log read alone: the
            # joined log would give the last container's line)
            said = []
            crashing = failing(pod)
            if crashing and not self.src.per_container_logs and log is not None:
                # one file of all its containers: the last error lines, each may be another's
                said = [ev("%s (all containers; failing: %s)" % (self.where.log(ns, name), ", ".join(crashing)),
                           line) for line in reversed(last_errors(log, 3))]
            for container in crashing if self.src.per_container_logs else []:
                # a restarted container's error is in its ended instance's log: the new one may
                # not have printed it yet (kubectl logs --previous, then the current)
                own = {}
                if len(containers) == 1 and log is not None:
                    own[False] = log    # its current log is the Pod's, read above - not asked twice
                for previous in (True, False) if False not in own else (True,):
                    try:
                        own[previous] = self.src.pod_log(ns, name, [container], previous=previous)
                    except Unreadable:
                        pass
                if own.get(True) and own[True] not in (log or ""):
                    log = "\n".join(([log] if log else []) + [own[True]])   # its words join the texts
                line = last_error("\n".join(own[k] for k in (True, False) if own.get(k)))
                if line:
                    said.append(ev("%s [container %s]" % (self.where.log(ns, name), container), line))
            self.last_errors[(ns, name)] = said
        self.pod_logs[(ns, name)] = log
        return pod_findings(pod, role, self.where, events, log)

    def texts(self, node, pod, plugin_pods, facts):
        """The error-text findings of the plugin's Pods, the Pod and the node's logs."""
        name = node["metadata"]["name"]
        found = []
        for plugin in plugin_pods:
            found += self._pod_texts(plugin, "device-plugin Pod")
        if pod is not None and (pod.get("spec") or {}).get("nodeName") == name:
            found += self._pod_texts(pod, "the Pod")
        elif pod is not None:
            found += pending_pod_findings(pod, self.where)
        try:
            kubelet_log = self.src.kubelet_log(name)
        except Unreadable:
            kubelet_log = None
        return found + node_findings(name, facts or {}, self.where, kubelet_log)

    def _runtimeclass(self, pod):
        """(runtimeClassName, the RuntimeClass or None, why the source cannot hold it)."""
        rc_name = ((pod or {}).get("spec") or {}).get("runtimeClassName")
        if not rc_name:
            return None, None, None
        try:
            return rc_name, self.src.runtimeclass(rc_name), None
        except Unreadable as exc:
            return rc_name, None, exc.why

    def toolkit(self, name):
        """NVIDIA's toolkit installer on node `name` (the Operator's DaemonSet Pod): [(Pod
        reference, its RUNTIME_RESTART_MODE, its last words about restarting containerd)] - what
        it said when it skipped, failed or did the restart. [] when none runs or it cannot be read."""
        try:
            pods = [p for p in self.src.pods(TOOLKIT_SELECTOR) if (p.get("spec") or {}).get("nodeName") == name]
        except Unreadable:
            return []
        found = []
        for pod in pods:
            ns, pod_name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
            env = {e.get("name"): e.get("value") for c in (pod.get("spec") or {}).get("containers") or []
                   for e in c.get("env") or [] if isinstance(e, dict)}
            try:
                log = self.src.pod_log(ns, pod_name) or ""
            except Unreadable:
                log = ""
            said = [line.strip() for line in log.splitlines() if re.search(TOOLKIT_RESTART_LINE, line)]
            found.append((self.where.log(ns, pod_name), env.get("RUNTIME_RESTART_MODE") or "signal (its default)",
                          said[-3:]))
        return found

    def see(self, node, pod=None):
        """Everything the rules judge on this node, read from the source: a Seen."""
        name = node["metadata"]["name"]
        try:
            here = [p for p in self.plugin_pods() if (p.get("spec") or {}).get("nodeName") == name]
            plugin_why = None
        except Unreadable as exc:
            here, plugin_why = [], exc.why
        plugins, others = [], []
        for p in here:
            what = plugin_component(p)
            if what:
                others.append((p, what))
            else:
                plugins.append(p)
        facts = self.facts(name)
        texts = self.texts(node, pod, plugins, facts)
        rc_name, runtimeclass, rc_why = self._runtimeclass(pod)
        daemonsets = self.daemonsets() if plugin_why is None and not plugins else None
        return Seen(node=node, name=name, labels=node["metadata"].get("labels") or {}, pod=pod,
                    request=pod_request(pod, self.resource) if pod else None, facts=facts,
                    texts=texts, plugin_pods=plugins, other_components=others,
                    plugin_why=plugin_why, daemonsets=daemonsets, rc_name=rc_name,
                    runtimeclass=runtimeclass, rc_why=rc_why,
                    missing={a: self.src.missing_reason(name, a) for a in EXPLAINED},
                    resource=self.resource, driver_labels=self.driver_labels,
                    selectors=self.dp_selectors, dp_namespace=self.dp_namespace,
                    where=self.where, last_errors=self.last_errors, toolkit=self.toolkit(name),
                    dra=self.dra(name, pod) if pod is not None and dra_layers.uses_claims(pod) else None)

    def dra(self, name, pod):
        """What a claim-based Pod's layers judge on node `name`: a dra_layers.Dra."""
        ns = pod["metadata"].get("namespace")
        claims = []
        for claim in dra_layers.claim_names(pod):
            try:
                claims.append((claim, self.src.resourceclaim(ns, claim), None))
            except Unreadable as exc:
                claims.append((claim, None, exc.why))
        try:
            slices = [s for s in self.src.resourceslices() if (s.get("spec") or {}).get("nodeName") == name]
            slices_why = None
        except Unreadable as exc:
            slices, slices_why = None, exc.why
        plugin_pods, plugin_why, logs = [], None, {}
        try:
            for selector in dra_layers.DRA_PLUGIN_SELECTORS:
                plugin_pods += [p for p in self.src.pods(selector) if (p.get("spec") or {}).get("nodeName") == name]
        except Unreadable as exc:
            plugin_pods, plugin_why = None, exc.why
        for p in plugin_pods or []:
            try:
                logs[p["metadata"]["name"]] = self.src.pod_log(p["metadata"].get("namespace"), p["metadata"]["name"])
            except Unreadable:
                pass
        own = self.pod_logs.get((ns, pod["metadata"]["name"])) or ""
        words = [line.strip() for line in own.splitlines() if dra_layers.GPU_WORDS.search(line)]
        return dra_layers.Dra(claims, slices, slices_why, plugin_pods, plugin_why, logs, pod_words=words)

    # ----------------------------------------------------------------- walk
    def walk_node(self, node, pod=None):
        """The six verdicts of one node, in LAYERS order."""
        seen = self.see(node, pod)
        return [rule(seen) for rule in (DRA_RULES if seen.dra is not None else RULES)]

    def _candidates(self, namespace, pod_name, node_name, pod, nodes, preface):
        if node_name:
            if node_name not in nodes:
                raise DiagnoseError("node %s does not exist; nodes: %s" % (
                    node_name, ", ".join(sorted(nodes)[:20]) or "none"))
            return [node_name]
        if pod is not None and (pod.get("spec") or {}).get("nodeName"):
            if pod["spec"]["nodeName"] not in nodes:
                raise DiagnoseError("Pod %s/%s is bound to node %s, which no longer exists"
                                    % (namespace, pod_name, pod["spec"]["nodeName"]))
            return [pod["spec"]["nodeName"]]
        if pod is None:
            raise DiagnoseError("give a pod (with namespace) or a node to diagnose")
        candidates = sorted(n for n, obj in nodes.items() if node_admits(pod, obj))
        how = "its nodeSelector and required node affinity admit"
        if not candidates:
            candidates = sorted(n for n, obj in nodes.items()
                                if node_admits(pod, obj, use_affinity=False))
            how = ("no node satisfies its required node affinity; judged on the nodes its "
                   "nodeSelector admits")
        preface.append(ev("Pending Pod: nodes %s" % how.split(";", maxsplit=1)[0],
                          ", ".join(candidates[:20]) or "none"))
        if how.startswith("no node"):
            preface.append(ev("note", how))
        if not candidates:
            selector = (pod.get("spec") or {}).get("nodeSelector")
            raise DiagnoseError("Pod %s/%s is Pending and its nodeSelector admits no node of "
                                "the cluster (%s)" % (namespace, pod_name, selector))
        return candidates

    def run(self, namespace=None, pod_name=None, node_name=None):
        pod = None
        preface = []
        if pod_name and "/" in pod_name and not namespace:
            namespace, pod_name = pod_name.split("/", 1)
        if pod_name:
            if not namespace:
                raise DiagnoseError("namespace is required with pod (or give pod as NS/NAME)")
            try:
                pod = self.src.pod(namespace, pod_name)
            except Unreadable as exc:
                raise DiagnoseError("Pod %s/%s cannot be read here: %s; diagnose a node instead"
                                    % (namespace, pod_name, exc.why))
            if pod is None:
                raise DiagnoseError("Pod %s/%s does not exist (%s: 404)" % (
                    namespace, pod_name, self.where.pod(namespace, pod_name)))
        nodes = self.nodes()
        candidates = self._candidates(namespace, pod_name, node_name, pod, nodes, preface)
        best = None
        for name in candidates[:50]:
            layers = self.walk_node(nodes[name], pod)
            depth = next((i for i, l in enumerate(layers) if l["status"] == "broken"), len(LAYERS))
            if best is None or depth > best[0]:
                best = (depth, name, layers)
        depth, chosen, layers = best
        if preface:
            layers[0]["evidence"] = preface + [ev("node judged", chosen)] + layers[0]["evidence"]
        first = next((l["layer"] for l in layers if l["status"] == "broken"), None)
        return {"node": chosen, "candidates": candidates, "layers": layers, "first_broken": first,
                "pod": "%s/%s" % (namespace, pod_name) if pod else None, "source": self.src.kind,
                "limits": self.src.limits()}
