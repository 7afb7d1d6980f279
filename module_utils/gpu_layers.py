# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why does this GPU Pod not run: the six layers, top-down, with evidence.

driver -> container-runtime -> device-plugin -> node-advertisement -> scheduling -> workload
(seed 003: the driver lets the host see the GPU, the toolkit lets the container see it, the
device plugin lets Kubernetes see it, and only then does the scheduler decide).

Each layer is judged on one node: the node the Pod is bound to, or - for a Pending Pod - each
node its nodeSelector and required node affinity admit, reporting the one whose path reaches
furthest. Status: ok, broken, skipped (could not be checked here, with the reason - never
counted as ok) or unknown. Evidence items say what was read (API path or command) and what it
showed. Node-side facts (nvidia-smi, containerd config dump, the plugin socket) come from
``node_facts`` when a node-side role gathered them; they decide the driver and
container-runtime layers. The cluster decides the rest.
"""

import re

from ansible.module_utils.lab_kube import condition, parse_quantity

LAYERS = ["driver", "container-runtime", "device-plugin", "node-advertisement", "scheduling",
          "workload"]
SOCKET_DIR = "/var/lib/kubelet/device-plugins"


class DiagnoseError(Exception):
    def __init__(self, message):
        self.message = message
        super().__init__(message)


def _ev(source, value):
    return {"source": source, "value": value}


def _layer(name, status, evidence, next_step, reason=None):
    out = {"layer": name, "status": status, "evidence": evidence, "next": next_step}
    if reason:
        out["reason"] = reason
    return out


def parse_selector(text):
    """A label selector string (a=b,c!=d,e,!f, g in (x,y)) as a predicate on labels."""
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
            raise DiagnoseError("device_plugin_selector %r: cannot read %r as a label selector "
                                "term (key=value, key!=value, key, !key, key in (a,b))" % (text, part))

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


def _expr_matches(expr, labels, fields):
    key, op = expr.get("key"), expr.get("operator")
    values = expr.get("values") or []
    source = fields if fields is not None else labels
    have = source.get(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return key in source
    if op == "DoesNotExist":
        return key not in source
    if op in ("Gt", "Lt"):
        try:
            left, right = int(have), int(values[0])
        except (TypeError, ValueError, IndexError):
            return False
        return left > right if op == "Gt" else left < right
    return False


def node_admits(pod, node, use_affinity=True):
    """Does the Pod's nodeSelector (and required node affinity) admit this node?"""
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    if not use_affinity:
        return True
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    fields = {"metadata.name": (node.get("metadata") or {}).get("name")}
    for term in terms:
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(_expr_matches(e, labels, None) for e in exprs) and \
                all(_expr_matches(e, labels, fields) for e in field_exprs):
            return True
    return False


def _amount(value):
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def pod_request(pod, resource):
    """What the Pod asks of the resource: the larger of the sum over containers and any init
    container (limits count as requests for extended resources)."""
    spec = pod.get("spec") or {}

    def one(c):
        res = c.get("resources") or {}
        value = (res.get("limits") or {}).get(resource, (res.get("requests") or {}).get(resource))
        return _amount(value) or 0
    total = sum(one(c) for c in spec.get("containers") or [])
    init = max([one(c) for c in spec.get("initContainers") or []] or [0])
    return max(total, init)


class Diagnosis(object):
    def __init__(self, kube, resource="nvidia.com/gpu", device_plugin_namespace=None,
                 device_plugin_selector="name=nvidia-device-plugin-ds",
                 driver_label="nvidia.com/cuda.driver.major", node_facts=None):
        self.kube = kube
        self.resource = resource
        self.dp_namespace = device_plugin_namespace
        self.dp_selector = device_plugin_selector
        self.dp_match = parse_selector(device_plugin_selector)
        self.driver_label = driver_label
        self.node_facts = node_facts or {}
        self._nodes = None
        self._dp_pods = None

    # ----------------------------------------------------------------- reads
    def nodes(self):
        if self._nodes is None:
            self._nodes = {n["metadata"]["name"]: n for n in self.kube.items("/api/v1/nodes")}
        return self._nodes

    def plugin_pods(self):
        if self._dp_pods is None:
            path = ("/api/v1/namespaces/%s/pods" % self.dp_namespace) if self.dp_namespace \
                else "/api/v1/pods"
            self._dp_pods = self.kube.items(path, labelSelector=self.dp_selector)
        return self._dp_pods

    def _plugin_path(self):
        base = ("/api/v1/namespaces/%s/pods" % self.dp_namespace) if self.dp_namespace \
            else "/api/v1/pods"
        return "%s?labelSelector=%s" % (base, self.dp_selector)

    # ---------------------------------------------------------------- layers
    def driver(self, node):
        name = node["metadata"]["name"]
        facts = self.node_facts.get(name)
        labels = node["metadata"].get("labels") or {}
        label_ev = _ev("GET /api/v1/nodes/%s .metadata.labels[%s]" % (name, self.driver_label),
                       labels.get(self.driver_label, "<missing>"))
        if facts is not None and facts.get("driver_ok") is not None:
            evidence = [_ev("node_facts[%s].driver_ok (nvidia-smi on the node)" % name,
                            facts.get("driver_ok"))]
            if facts.get("driver_version"):
                evidence.append(_ev("node_facts[%s].driver_version" % name, facts["driver_version"]))
            evidence.append(label_ev)
            if facts["driver_ok"]:
                if self.driver_label not in labels:
                    evidence.append(_ev("note", "nvidia-smi works but the node lacks the label %s: "
                                        "GPU feature discovery has not (re)labelled it"
                                        % self.driver_label))
                return _layer("driver", "ok", evidence, "the host sees its GPUs; go on to the "
                              "container runtime")
            return _layer("driver", "broken", evidence,
                          "on %s: run nvidia-smi and check the kernel module (lsmod | grep nvidia; "
                          "dkms status) - a kernel update needs the driver rebuilt for the new "
                          "kernel" % name)
        if self.driver_label in labels:
            return _layer("driver", "ok", [label_ev],
                          "the driver label is present; confirm with nvidia-smi on the node "
                          "when in doubt")
        labelled = sorted(n for n, obj in self.nodes().items()
                          if self.driver_label in (obj["metadata"].get("labels") or {}))
        capacity = ((node.get("status") or {}).get("capacity") or {}).get(self.resource)
        if _amount(capacity):
            return _layer("driver", "broken", [label_ev, _ev(
                "GET /api/v1/nodes/%s .status.capacity[%s]" % (name, self.resource), capacity)],
                "%s still lists %s %s but has lost its driver label: the GPU is gone for the "
                "host (after a kernel update the driver module is not rebuilt). On %s run "
                "nvidia-smi; Pods placed there fail inside the application" % (
                    name, capacity, self.resource, name))
        if not labelled:
            return _layer("driver", "unknown", [label_ev, _ev(
                "GET /api/v1/nodes (label %s on any node)" % self.driver_label, "none")],
                "no node carries %s (GPU feature discovery not deployed?): give node_facts from "
                "nvidia-smi on the node" % self.driver_label,
                reason="the cluster carries no driver label to judge by")
        return _layer("driver", "broken", [label_ev, _ev(
            "GET /api/v1/nodes (nodes that carry %s)" % self.driver_label, ", ".join(labelled[:10]))],
            "%s has no driver label while other nodes carry it: on %s run nvidia-smi; after a "
            "kernel update the driver module must be rebuilt" % (name, name))

    def container_runtime(self, node, pod):
        name = node["metadata"]["name"]
        evidence = []
        handler = None
        rc_name = ((pod or {}).get("spec") or {}).get("runtimeClassName")
        if rc_name:
            rc = self.kube.get("/apis/node.k8s.io/v1/runtimeclasses/%s" % rc_name, missing_ok=True)
            if rc is None:
                return _layer("container-runtime", "broken", [_ev(
                    "GET /apis/node.k8s.io/v1/runtimeclasses/%s" % rc_name, "404 Not Found")],
                    "create RuntimeClass %s (handler: the runtime name in containerd's config, "
                    "e.g. nvidia)" % rc_name)
            handler = rc.get("handler")
            evidence.append(_ev("GET /apis/node.k8s.io/v1/runtimeclasses/%s .handler" % rc_name,
                                handler))
        elif pod is not None:
            evidence.append(_ev("Pod .spec.runtimeClassName", "<none>: containerd's default "
                                "runtime runs it"))
        facts = self.node_facts.get(name) or {}
        loaded = facts.get("runtimes_loaded")
        if loaded is None:
            return _layer("container-runtime", "skipped", evidence,
                          "on %s run `containerd config dump` (or the gpu_diagnosis role's node "
                          "side over SSH) and pass its runtimes as node_facts.runtimes_loaded"
                          % name, reason="what containerd has loaded can only be read on the node")
        evidence.append(_ev("node_facts[%s].runtimes_loaded (containerd config dump)" % name,
                            list(loaded)))
        wanted = handler or "nvidia"
        if wanted in loaded:
            return _layer("container-runtime", "ok", evidence,
                          "containerd has the %s runtime loaded; go on to the device plugin" % wanted)
        if handler is None:
            return _layer("container-runtime", "unknown", evidence,
                          "no RuntimeClass and no nvidia runtime loaded: the GPU works only if "
                          "containerd's default runtime is NVIDIA's (or CDI is on)",
                          reason="without a RuntimeClass the handler cannot be named")
        return _layer("container-runtime", "broken", evidence,
                      "containerd on %s has not loaded the %s runtime: check the drop-in is "
                      "imported and merged (containerd_merge), then restart containerd - a Pod "
                      "with this RuntimeClass fails with 'no runtime for \"%s\" is configured'"
                      % (name, handler, handler))

    def device_plugin(self, node):
        name = node["metadata"]["name"]
        pods = [p for p in self.plugin_pods() if (p.get("spec") or {}).get("nodeName") == name
                and self.dp_match((p.get("metadata") or {}).get("labels") or {})]
        source = "GET %s (spec.nodeName=%s)" % (self._plugin_path(), name)
        evidence = []
        facts = self.node_facts.get(name) or {}
        if not pods:
            evidence.append(_ev(source, "no device-plugin Pod on %s" % name))
            if facts.get("device_plugin_socket"):
                evidence.append(_ev("note", "node_facts says the plugin socket exists on %s, but no "
                                    "plugin Pod runs there: a stale socket file, judged by the "
                                    "cluster" % name))
            return _layer("device-plugin", "broken", evidence,
                          "the device-plugin DaemonSet has no Pod on %s: check its nodeSelector/"
                          "affinity/tolerations against the node's labels and taints, and "
                          "`kubectl get ds -A -l %s`" % (name, self.dp_selector))
        broken = None
        for pod in pods:
            pname = "%s/%s" % (pod["metadata"].get("namespace"), pod["metadata"]["name"])
            phase = (pod.get("status") or {}).get("phase")
            ready = condition(pod, "Ready").get("status")
            mounted = _mounts_socket_dir(pod)
            evidence.append(_ev("GET /api/v1/namespaces/%s/pods/%s" % tuple(pname.split("/")),
                                "phase=%s Ready=%s mounts %s: %s" % (
                                    phase, ready or "<unset>", SOCKET_DIR,
                                    "yes" if mounted else "no")))
            if phase != "Running" or ready != "True":
                broken = broken or ("the device-plugin Pod %s is %s (Ready=%s): kubectl -n %s "
                                    "describe pod %s and its logs" % (
                                        pname, phase, ready, pname.split("/")[0],
                                        pname.split("/")[1]))
            elif not mounted:
                broken = broken or ("the device-plugin Pod %s does not mount the hostPath %s: it "
                                    "cannot register with the kubelet - add the volume and "
                                    "volumeMount" % (pname, SOCKET_DIR))
        if facts.get("device_plugin_socket") is False and not broken:
            evidence.append(_ev("note", "node_facts says no plugin socket on %s while a plugin "
                                "Pod runs there and mounts the folder; judged by the cluster - "
                                "look at the plugin's log" % name))
        if broken:
            return _layer("device-plugin", "broken", evidence, broken)
        return _layer("device-plugin", "ok", evidence, "the plugin runs and mounts the kubelet's "
                      "socket folder; go on to what the node advertises")

    def advertisement(self, node, request=None):
        name = node["metadata"]["name"]
        status = node.get("status") or {}
        cap = (status.get("capacity") or {}).get(self.resource)
        alloc = (status.get("allocatable") or {}).get(self.resource)
        evidence = [
            _ev("GET /api/v1/nodes/%s .status.capacity[%s]" % (name, self.resource), cap or "<missing>"),
            _ev("GET /api/v1/nodes/%s .status.allocatable[%s]" % (name, self.resource),
                alloc or "<missing>")]
        if not _amount(cap) or not _amount(alloc):
            return _layer("node-advertisement", "broken", evidence,
                          "the node does not advertise %s (capacity %s, allocatable %s): read the "
                          "kubelet log on %s for the plugin's registration (journalctl -u "
                          "kubelet | grep -i device)" % (self.resource, cap or "missing",
                                                         alloc or "missing", name))
        if request and request > _amount(alloc):
            evidence.append(_ev("note", "the Pod asks for %s, more than the %s allocatable - a "
                                "scheduling finding, the advertisement itself is right"
                                % (_qty(request), alloc)))
        return _layer("node-advertisement", "ok", evidence,
                      "%s advertises %s %s; go on to the scheduler" % (name, alloc, self.resource))

    def scheduling(self, node, pod):
        name = node["metadata"]["name"]
        spec = node.get("spec") or {}
        taints = spec.get("taints") or []
        if pod is None:
            evidence = [_ev("GET /api/v1/nodes/%s .spec.unschedulable" % name,
                            bool(spec.get("unschedulable"))),
                        _ev("GET /api/v1/nodes/%s .spec.taints" % name,
                            ["%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect"))
                             for t in taints] or "none")]
            ready = condition(node, "Ready").get("status")
            evidence.append(_ev("GET /api/v1/nodes/%s Ready condition" % name, ready or "<unset>"))
            if spec.get("unschedulable") or ready != "True":
                return _layer("scheduling", "broken", evidence,
                              "the node is %s: nothing new is scheduled there"
                              % ("cordoned" if spec.get("unschedulable") else "not Ready"))
            hard = [t for t in taints if t.get("effect") in ("NoSchedule", "NoExecute")]
            if hard:
                return _layer("scheduling", "ok", evidence, "only Pods that tolerate %s land here"
                              % ", ".join(t.get("key", "") for t in hard))
            return _layer("scheduling", "ok", evidence, "the node takes Pods; give a Pod to check "
                          "its own scheduling")
        pname = "%s/%s" % (pod["metadata"].get("namespace"), pod["metadata"]["name"])
        cond = condition(pod, "PodScheduled")
        source = "GET /api/v1/namespaces/%s/pods/%s .status.conditions[PodScheduled]" % tuple(
            pname.split("/"))
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound:
            return _layer("scheduling", "ok", [_ev(source, cond.get("status") or "True"),
                                               _ev("Pod .spec.nodeName", bound)],
                          "scheduled to %s; go on to the workload" % bound)
        if not cond:
            return _layer("scheduling", "unknown", [_ev(source, "<not set yet>")],
                          "the scheduler has not judged the Pod yet: wait for PodScheduled",
                          reason="no PodScheduled condition yet")
        message = cond.get("message") or ""
        evidence = [_ev(source, "status=%s reason=%s" % (cond.get("status"), cond.get("reason"))),
                    _ev("PodScheduled.message", message)]
        findings = scheduler_findings(message, self.resource)
        request = pod_request(pod, self.resource)
        alloc = _amount(((node.get("status") or {}).get("allocatable") or {}).get(self.resource))
        if request and alloc is not None and request > alloc:
            findings.append("the Pod requests %s %s; %s advertises %s" % (
                _qty(request), self.resource, name, _qty(alloc)))
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        untolerated = [t for t in taints if t.get("effect") in ("NoSchedule", "NoExecute")
                       and not any(_tolerates(tol, t) for tol in tolerations)]
        if untolerated:
            findings.append("%s has taint(s) the Pod does not tolerate: %s" % (name, ", ".join(
                "%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect")) for t in untolerated)))
        if spec.get("unschedulable"):
            findings.append("%s is cordoned (spec.unschedulable)" % name)
        for finding in findings:
            evidence.append(_ev("finding", finding))
        return _layer("scheduling", "broken", evidence,
                      "; ".join(findings) if findings else "read the scheduler's message above: "
                      "kubectl describe pod %s -n %s" % (pname.split("/")[1], pname.split("/")[0]))

    def workload(self, pod):
        if pod is None:
            return _layer("workload", "skipped", [], "give a Pod to judge a workload",
                          reason="no Pod given")
        status = pod.get("status") or {}
        phase = status.get("phase")
        pname = "%s/%s" % (pod["metadata"].get("namespace"), pod["metadata"]["name"])
        source = "GET /api/v1/namespaces/%s/pods/%s" % tuple(pname.split("/"))
        evidence = [_ev(source + " .status.phase", phase)]
        if not (pod.get("spec") or {}).get("nodeName"):
            return _layer("workload", "skipped", evidence, "the Pod never reached a node",
                          reason="not scheduled, so no container ran")
        bad = []
        for cs in status.get("containerStatuses") or []:
            state = cs.get("state") or {}
            kind = next(iter(state), "unknown")
            detail = state.get(kind) or {}
            evidence.append(_ev("containerStatuses[%s]" % cs.get("name"),
                                "%s%s ready=%s restarts=%s" % (
                                    kind, " (%s)" % detail.get("reason") if detail.get("reason") else "",
                                    cs.get("ready"), cs.get("restartCount", 0))))
            if kind == "waiting" or (kind == "terminated" and detail.get("exitCode")) or \
                    cs.get("restartCount", 0) > 0 and not cs.get("ready"):
                bad.append("%s: %s%s" % (cs.get("name"), kind,
                                         " (%s)" % detail.get("reason") if detail.get("reason") else ""))
        if phase == "Failed" or bad:
            return _layer("workload", "broken", evidence,
                          "the container itself fails (%s): kubectl logs %s -n %s --previous; a "
                          "'no CUDA-capable device' inside means the GPU was not handed in" % (
                              "; ".join(bad) or phase, pname.split("/")[1], pname.split("/")[0]))
        if phase in ("Running", "Succeeded"):
            return _layer("workload", "ok", evidence, "the workload runs; look at its own logs "
                          "and metrics for anything further")
        return _layer("workload", "unknown", evidence, "the Pod is %s: watch it" % phase,
                      reason="phase %s" % phase)

    # ----------------------------------------------------------------- walk
    def walk_node(self, node, pod=None):
        request = pod_request(pod, self.resource) if pod else None
        return [self.driver(node), self.container_runtime(node, pod), self.device_plugin(node),
                self.advertisement(node, request), self.scheduling(node, pod), self.workload(pod)]

    def run(self, namespace=None, pod_name=None, node_name=None):
        pod = None
        preface = []
        if pod_name:
            if not namespace:
                raise DiagnoseError("namespace is required with pod")
            pod = self.kube.get("/api/v1/namespaces/%s/pods/%s" % (namespace, pod_name),
                                missing_ok=True)
            if pod is None:
                raise DiagnoseError("Pod %s/%s does not exist (GET /api/v1/namespaces/%s/pods/%s: "
                                    "404)" % (namespace, pod_name, namespace, pod_name))
        nodes = self.nodes()
        if node_name:
            if node_name not in nodes:
                raise DiagnoseError("node %s does not exist; nodes: %s" % (
                    node_name, ", ".join(sorted(nodes)[:20]) or "none"))
            candidates = [node_name]
        elif pod is not None and (pod.get("spec") or {}).get("nodeName"):
            candidates = [pod["spec"]["nodeName"]]
            if candidates[0] not in nodes:
                raise DiagnoseError("Pod %s/%s is bound to node %s, which no longer exists"
                                    % (namespace, pod_name, candidates[0]))
        elif pod is not None:
            candidates = sorted(n for n, obj in nodes.items() if node_admits(pod, obj))
            how = "its nodeSelector and required node affinity admit"
            if not candidates:
                candidates = sorted(n for n, obj in nodes.items()
                                    if node_admits(pod, obj, use_affinity=False))
                how = ("no node satisfies its required node affinity; judged on the nodes its "
                       "nodeSelector admits")
            preface.append(_ev("Pending Pod: nodes %s" % how.split(";", maxsplit=1)[0],
                               ", ".join(candidates[:20]) or "none"))
            if how.startswith("no node"):
                preface.append(_ev("note", how))
            if not candidates:
                selector = (pod.get("spec") or {}).get("nodeSelector")
                raise DiagnoseError("Pod %s/%s is Pending and its nodeSelector admits no node of "
                                    "the cluster (%s)" % (namespace, pod_name, selector))
        else:
            raise DiagnoseError("give a pod (with namespace) or a node to diagnose")
        best = None
        for name in candidates[:50]:
            layers = self.walk_node(nodes[name], pod)
            depth = next((i for i, l in enumerate(layers) if l["status"] == "broken"), len(LAYERS))
            if best is None or depth > best[0]:
                best = (depth, name, layers)
        depth, chosen, layers = best
        if preface:
            layers[0]["evidence"] = preface + [_ev("node judged", chosen)] + layers[0]["evidence"]
        first = next((l["layer"] for l in layers if l["status"] == "broken"), None)
        return {"node": chosen, "candidates": candidates, "layers": layers, "first_broken": first,
                "pod": "%s/%s" % (namespace, pod_name) if pod else None}


def _tolerates(tol, taint):
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("operator") == "Exists":
        return not tol.get("key") or tol.get("key") == taint.get("key")
    return tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", "")


def _mounts_socket_dir(pod):
    spec = pod.get("spec") or {}
    volumes = {}
    for vol in spec.get("volumes") or []:
        path = ((vol.get("hostPath") or {}).get("path") or "").rstrip("/")
        if path and (SOCKET_DIR == path or SOCKET_DIR.startswith(path + "/")):
            volumes[vol.get("name")] = path
    for container in spec.get("containers") or []:
        for mount in container.get("volumeMounts") or []:
            if mount.get("name") in volumes:
                return True
    return False


def _qty(value):
    text = str(value)
    return text[:-2] if text.endswith(".0") else text


def scheduler_findings(message, resource):
    """What the scheduler's own message names: taints, affinity, resources, RuntimeClass."""
    out = []
    for count, what in re.findall(r"(\d+) (Insufficient [\w./-]+)", message):
        out.append("%s node(s): %s" % (count, what))
    for count, taint in re.findall(r"(\d+) node\(s\) had untolerated taint(?:\(s\))?(?: ?\{([^}]*)\})?",
                                   message):
        out.append("%s node(s) have an untolerated taint%s" % (count, " {%s}" % taint if taint else ""))
    if "node affinity/selector" in message or "NodeAffinity" in message:
        out.append("the Pod's nodeSelector/required affinity excludes node(s)")
    if "were unschedulable" in message:
        out.append("node(s) are cordoned")
    if "RuntimeClass" in message or "runtimeclass" in message.lower():
        out.append("the RuntimeClass's scheduling rules exclude node(s)")
    return out


def markdown(result, resource):
    lines = ["# GPU diagnosis%s" % (" of Pod " + result["pod"] if result.get("pod") else ""),
             "",
             "Node judged: %s. First broken layer: **%s**." % (
                 result["node"], result["first_broken"] or "none"), "",
             "| layer | status | next |", "|---|---|---|"]
    for layer in result["layers"]:
        cells = (layer["layer"], layer["status"], layer["next"].replace("|", "/"))
        lines.append("| %s | %s | %s |" % cells)
    lines.append("")
    for layer in result["layers"]:
        lines.append("## %s: %s" % (layer["layer"], layer["status"]))
        if layer.get("reason"):
            lines.append("Reason: %s" % layer["reason"])
        for item in layer["evidence"]:
            lines.append("- %s: %s" % (item["source"], item["value"]))
        lines.append("")
    return "\n".join(lines)


_RUNTIME_HEADER = re.compile(
    r"""^\s*\[plugins\.(?:"io\.containerd\.grpc\.v1\.cri"|'io\.containerd\.grpc\.v1\.cri'|"""
    r"""'io\.containerd\.cri\.v1\.runtime'|"io\.containerd\.cri\.v1\.runtime")"""
    r"""\.containerd\.runtimes\.("[^"]+"|'[^']+'|[A-Za-z0-9_-]+)\]\s*$""", re.M)


def runtimes_from_dump(text):
    """Runtime names of a `containerd config dump` (1.x and 2.x spelling), in order.

    Only the runtime tables themselves count - `runtimes.nvidia.options` is not a runtime, and
    `nvidia-cdi` is not `nvidia`."""
    names = []
    for match in _RUNTIME_HEADER.finditer(text or ""):
        name = match.group(1).strip("\"'")
        if name not in names:
            names.append(name)
    return names
