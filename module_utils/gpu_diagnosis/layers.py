# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why does this GPU Pod not run: the six layers, top-down, with evidence.

driver -> container-runtime -> device-plugin -> node-advertisement -> scheduling -> workload
(seed 003: the driver lets the host see the GPU, the toolkit lets the container see it, the
device plugin lets Kubernetes see it, and only then does the scheduler decide).

Each layer is judged on one node: the node the Pod is bound to, or - for a Pending Pod - each
node its nodeSelector and required node affinity admit, reporting the one whose path reaches
furthest. Status: ok, broken, skipped (could not be checked here, with the reason - never
counted as ok) or unknown. Evidence items say what was read (API path, bundle file or command)
and what it showed.

The rules read the cluster and the nodes through one interface (gpu_sources: a live cluster,
a support bundle, or the GPU Operator's must-gather) - there is no second copy of them.
What decides each layer:

- driver: nvidia-smi on the node (node facts: driver_ok, driver_error, gpus), the kernel's
  NVRM lines (Xid 79 "fallen off the bus", "GPU is lost"), the GPU count against
  ``nvidia.com/gpu.count``, Fabric Manager on NVSwitch systems (CUDA error 802 while
  nvidia-smi works). Labels (``nvidia.com/cuda.driver-version.*``, the deprecated
  ``nvidia.com/cuda.driver.major``, the guard's ``gpu-incident-lab/driver-version``) are
  evidence only: with the NodeFeature API they outlive a dead driver, in file mode they vanish
  for a minute on each GFD restart.
- container-runtime: the RUNNING CRI config (``crictl info``: runtimes, default runtime, CDI);
  what the files would load (``containerd config dump``) only as "restart pending". A Pod with
  a RuntimeClass needs its handler; a Pod without one runs with the default runtime, and gets
  a GPU only when that runtime is NVIDIA's or CDI is on.
- device-plugin: the plugin's Pods on the node found by any of the three labelings (static
  manifest, GPU Operator, Helm chart) or the given selector, told apart from the GFD and MPS
  Pods the Helm chart labels alike, their state, the socket mount, and their log.
- node-advertisement: capacity and allocatable against nvidia-smi's GPU count; allocatable
  below capacity means GPUs marked unhealthy (Xid).
- scheduling and workload: the Pod's conditions, events, container states and log.

Error texts found in events, container states and logs are mapped to the layer that causes
them (TEXT_RULES): an error that surfaces in the workload or the plugin but is caused lower is
judged at the lower layer, with the text as evidence.
"""

import re

from ansible.module_utils.gpu_diagnosis.artefacts import APPLICATION_XIDS, gpu_lost_lines, xids
from ansible.module_utils.gpu_diagnosis.artefacts import runtimes_from_dump as _runtimes_from_dump
from ansible.module_utils.gpu_diagnosis.sources import (  # noqa: F401
    DiagnoseError, LiveSource, Source, Unreadable, parse_selector)
from ansible.module_utils.lab_kube import condition, parse_quantity

# the dump parser lived here first; lab_checks and the tests still call it by this name
runtimes_from_dump = _runtimes_from_dump

LAYERS = ["driver", "container-runtime", "device-plugin", "node-advertisement", "scheduling",
          "workload"]
SOCKET_DIR = "/var/lib/kubelet/device-plugins"

# The three ways the NVIDIA device plugin's Pods are labelled: the static manifest
# (deployments/static/nvidia-device-plugin.yml), the GPU Operator (its
# nvidia-device-plugin-daemonset), the Helm chart (deployments/helm/nvidia-device-plugin:
# app.kubernetes.io/name - on its GFD and MPS DaemonSets too).
PLUGIN_SELECTORS = ("name=nvidia-device-plugin-ds", "app=nvidia-device-plugin-daemonset",
                    "app.kubernetes.io/name=nvidia-device-plugin")
# Containers that make a Pod GPU feature discovery or the MPS control daemon, not the plugin
# (Helm chart templates daemonset-gfd.yml, daemonset-mps-control-daemon.yml: container names
# gpu-feature-discovery-ctr / mps-control-daemon-ctr, commands gpu-feature-discovery /
# mps-control-daemon).
OTHER_COMPONENTS = {"gpu-feature-discovery": "GPU feature discovery",
                    "mps-control-daemon": "MPS control daemon"}
DRIVER_LABELS = ("gpu-incident-lab/driver-version", "nvidia.com/cuda.driver-version.full",
                 "nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver.major")

# Error texts -> the layer that causes them. Order matters: the first rule that matches a line
# names it. Sources of the texts: tests/diagnosis_corpus/*/SOURCE.md.
TEXT_RULES = [
    ("driver", "nvidia-container-cli could not load the host's driver library or the driver "
     "is not loaded", re.compile(r"nvidia-container-cli: initialization error: (load library "
                                 r"failed|nvml error: driver not loaded)", re.I)),
    ("driver", "the driver's user-space library and kernel module differ (driver upgraded "
     "without a reboot or module reload)", re.compile(r"Driver/library version mismatch", re.I)),
    ("driver", "a GPU is gone for the host (Xid 79, GPU is lost)",
     re.compile(r"GPU is lost|fallen off the bus", re.I)),
    ("driver", "the NVIDIA driver is not loaded or does not answer",
     re.compile(r"couldn'?t communicate with the NVIDIA driver|could not communicate with the "
                r"NVIDIA driver|NVIDIA driver on your system is not loaded", re.I)),
    ("driver", "CUDA is not initialized: on NVSwitch systems Fabric Manager is not running "
     "(CUDA error 802)", re.compile(r"error 802|system not yet initialized|cudaErrorSystemNotReady"
                                    r"|CUDA_ERROR_SYSTEM_NOT_READY", re.I)),
    ("container-runtime", "containerd has no runtime of that name loaded (FailedCreatePodSandBox)",
     re.compile(r'no runtime for "([^"]+)" is configured')),
    ("container-runtime", "a CDI device the Pod was given has no CDI spec on the node "
     "(the toolkit's spec in /etc/cdi or /var/run/cdi is missing)",
     re.compile(r"unresolvable CDI devices", re.I)),
    ("container-runtime", "the container got no NVIDIA driver libraries: its runtime is not "
     "NVIDIA's and CDI is off", re.compile(r"could not load NVML library|ERROR_LIBRARY_NOT_FOUND|"
                                           r"libnvidia-ml\.so\.1: cannot open shared object", re.I)),
    ("container-runtime", "NVML in the container fails with Unknown Error (the container lost "
     "its device access, e.g. after a systemd reload with runc's systemd cgroup driver)",
     re.compile(r"Failed to initialize NVML: Unknown Error", re.I)),
    ("container-runtime", "the GPU was not handed into the container",
     re.compile(r"no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE", re.I)),
    ("container-runtime", "containerd's CRI plugin is not serving",
     re.compile(r"failed to load plugin io\.containerd\.grpc\.v1\.cri|unknown service "
                r"runtime\.v1\.RuntimeService", re.I)),
    ("container-runtime", "the plugin found no GPU: its container has no NVIDIA runtime or CDI "
     "(NVML not detected, 'Incompatible strategy detected auto'), or the driver lists none",
     re.compile(r"No devices found|Incompatible strategy detected", re.I)),
    ("device-plugin", "the kubelet's Allocate call to the device plugin failed "
     "(UnexpectedAdmissionError)", re.compile(r"UnexpectedAdmissionError|Allocate failed|"
                                              r"no healthy devices present|requested number of "
                                              r"devices unavailable", re.I)),
    ("node-advertisement", "the plugin marked a GPU unhealthy after an Xid",
     re.compile(r"XidCriticalError|will go unhealthy|marking device \S+ as unhealthy", re.I)),
]


def text_findings(text, source):
    """[{layer, what, line, source, match}] for each line of `text` a TEXT_RULE names."""
    out, seen = [], set()
    for line in (text or "").splitlines():
        for layer, what, pattern in TEXT_RULES:
            match = pattern.search(line)
            if match:
                key = (layer, what, line.strip()[-300:])
                if key not in seen:
                    seen.add(key)
                    out.append({"layer": layer, "what": what, "line": line.strip()[-300:],
                                "source": source, "match": match})
                break
    return out


def _ev(source, value):
    return {"source": source, "value": value}


def _layer(name, status, evidence, next_step, reason=None):
    out = {"layer": name, "status": status, "evidence": evidence, "next": next_step}
    if reason:
        out["reason"] = reason
    return out


def plugin_component(pod):
    """None for a device-plugin Pod, else what it is (GPU feature discovery, MPS daemon)."""
    spec = pod.get("spec") or {}
    for container in spec.get("containers") or []:
        words = [container.get("name") or ""] + [str(c) for c in container.get("command") or []]
        for word in words:
            base = word.rsplit("/", 1)[-1]
            for prefix, what in OTHER_COMPONENTS.items():
                if base.startswith(prefix):
                    return what
    labels = (pod.get("metadata") or {}).get("labels") or {}
    component = labels.get("app.kubernetes.io/component", "")
    for prefix, what in OTHER_COMPONENTS.items():
        if component.startswith(prefix) or prefix in labels.get("app", ""):
            return what
    return None


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
    """Diagnosis(source_or_kube, resource, device_plugin_namespace, device_plugin_selector,
    driver_label, node_facts).run(namespace, pod_name, node_name).

    `source_or_kube`: a gpu_sources Source (LiveSource, BundleSource, MustGatherSource) or a
    lab_kube client (wrapped in a LiveSource with `node_facts`). `device_plugin_selector`:
    None = the three labelings of PLUGIN_SELECTORS; a selector = only that one.
    `driver_label`: None = DRIVER_LABELS; a label = that one first."""

    def __init__(self, kube, resource="nvidia.com/gpu", device_plugin_namespace=None,
                 device_plugin_selector=None, driver_label=None, node_facts=None):
        self.src = kube if isinstance(kube, Source) else LiveSource(kube, node_facts)
        self.resource = resource
        self.dp_namespace = device_plugin_namespace
        self.dp_selectors = [device_plugin_selector] if device_plugin_selector \
            else list(PLUGIN_SELECTORS)
        for selector in self.dp_selectors:
            parse_selector(selector)  # refuse a bad selector before reading anything
        self.driver_labels = [driver_label] + [d for d in DRIVER_LABELS if d != driver_label] \
            if driver_label else list(DRIVER_LABELS)
        self._plugin_pods = None

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

    def _pod_texts(self, pod, role):
        """Findings from a Pod's status, container states, events and log."""
        ns, name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        ref = self.src.ref_pod(ns, name)
        out = []
        status = pod.get("status") or {}
        if status.get("reason") or status.get("message"):
            out += text_findings("%s: %s" % (status.get("reason", ""), status.get("message", "")),
                                 "%s .status (%s)" % (ref, role))
        for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
            for state_key in ("state", "lastState"):
                for kind, detail in ((cs.get(state_key) or {}).items()):
                    if isinstance(detail, dict) and detail.get("message"):
                        out += text_findings(detail["message"], "%s .status.containerStatuses[%s]."
                                             "%s.%s.message (%s)" % (ref, cs.get("name"),
                                                                     state_key, kind, role))
        try:
            for event in self.src.events(ns, name):
                out += text_findings("%s: %s" % (event.get("reason", ""), event.get("message", "")),
                                     "%s %s (%s)" % (self.src.ref_events(ns, name),
                                                     event.get("reason", ""), role))
        except Unreadable:
            pass
        if (pod.get("spec") or {}).get("nodeName") and (status.get("containerStatuses")):
            containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
            try:
                out += text_findings(self.src.pod_log(ns, name, containers),
                                     "%s (%s)" % (self.src.ref_log(ns, name), role))
            except Unreadable:
                pass
        return out

    def texts(self, node, pod, plugin_pods):
        found = []
        for plugin in plugin_pods:
            found += self._pod_texts(plugin, "device-plugin Pod")
        if pod is not None and (pod.get("spec") or {}).get("nodeName") == node["metadata"]["name"]:
            found += self._pod_texts(pod, "the Pod")
        elif pod is not None:
            status = pod.get("status") or {}
            found += text_findings("%s: %s" % (status.get("reason", ""), status.get("message", "")),
                                   "%s .status" % self.src.ref_pod(pod["metadata"].get("namespace"),
                                                                   pod["metadata"]["name"]))
        facts = self.facts(node["metadata"]["name"]) or {}
        for line in facts.get("containerd_errors") or []:
            found += text_findings(line, "%s containerd_errors (containerd's log)"
                                   % self.src.ref_facts(node["metadata"]["name"]))
        if facts.get("cri_error"):
            found += text_findings(facts["cri_error"], "%s cri_error (crictl info)"
                                   % self.src.ref_facts(node["metadata"]["name"]))
        try:
            found += text_findings(self.src.kubelet_log(node["metadata"]["name"]),
                                   "%skubelet.log" % self.src.ref_facts(node["metadata"]["name"]))
        except Unreadable:
            pass
        return found

    # ---------------------------------------------------------------- layers
    def driver(self, node, texts):
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        facts = self.facts(name)
        fref = self.src.ref_facts(name)
        label_ev = [_ev("%s .metadata.labels[%s]" % (self.src.ref_node(name), key), labels[key])
                    for key in self.driver_labels if key in labels]
        if not label_ev:
            label_ev = [_ev("%s .metadata.labels[%s]" % (self.src.ref_node(name), key), "<missing>")
                        for key in self.driver_labels[:2]]
        mine = [t for t in texts if t["layer"] == "driver"]
        evidence = []
        kernel = (facts or {}).get("kernel_xid")
        lost = gpu_lost_lines(kernel)
        if facts is not None and facts.get("driver_ok") is not None:
            evidence.append(_ev("%s driver_ok (nvidia-smi on the node%s)" % (
                fref, ": " + facts["nvidia_smi"] if facts.get("nvidia_smi") else ""),
                facts["driver_ok"]))
            if facts.get("driver_version"):
                evidence.append(_ev("%s driver_version" % fref, facts["driver_version"]))
            if facts.get("driver_error"):
                evidence.append(_ev("%s driver_error (nvidia-smi's output)" % fref,
                                    facts["driver_error"]))
            for line in lost[-3:]:
                evidence.append(_ev("%s kernel_xid (dmesg)" % fref, line))
            evidence += label_ev
            if not facts["driver_ok"]:
                return _layer("driver", "broken", evidence + self._text_ev(mine),
                              _driver_next(name, (facts.get("driver_error") or "") + " ".join(lost)))
            if lost:
                return _layer("driver", "broken", evidence, "the kernel on %s says a GPU is gone "
                              "(%s): nvidia-smi still answers for the others. Drain the node, "
                              "reset or reseat the GPU (nvidia-smi -r, or a reboot), check power "
                              "and PCIe; the plugin marks it unhealthy" % (name, lost[-1][:120]))
            gpus = facts.get("gpus")
            expected = _amount(labels.get("nvidia.com/gpu.count"))
            # under a MIG strategy GFD counts MIG devices in gpu.count; only compare whole GPUs
            whole = labels.get("nvidia.com/mig.strategy", "none") == "none"
            if gpus is not None and expected and whole and len(gpus) < expected:
                evidence.append(_ev("%s gpus (nvidia-smi --query-gpu)" % fref, len(gpus)))
                evidence.append(_ev("%s .metadata.labels[nvidia.com/gpu.count]"
                                    % self.src.ref_node(name), labels["nvidia.com/gpu.count"]))
                return _layer("driver", "broken", evidence, "nvidia-smi on %s lists %d GPU(s), "
                              "GPU feature discovery counted %s: a GPU dropped out (dmesg | grep "
                              "NVRM for Xid 79)" % (name, len(gpus), labels["nvidia.com/gpu.count"]))
            fabric = facts.get("fabric_manager")
            if fabric is not None:
                evidence.append(_ev("%s fabric_manager (systemctl nvidia-fabricmanager)" % fref,
                                    fabric))
                if fabric != "active":
                    return _layer("driver", "broken", evidence + self._text_ev(mine),
                                  "Fabric Manager is %s on %s, an NVSwitch system: nvidia-smi "
                                  "works but CUDA fails with error 802 (system not yet "
                                  "initialized). Install/start nvidia-fabricmanager of the "
                                  "driver's version (%s) and check its log" % (
                                      fabric, name, facts.get("driver_version", "?")))
            for code, pci, line in xids(kernel):
                if code not in APPLICATION_XIDS:
                    evidence.append(_ev("note", "Xid %d on %s: the device plugin marks that GPU "
                                        "unhealthy (%s)" % (code, pci, line[:160])))
            live = [t for t in mine if "802" in t["what"] and fabric is None]
            if live:
                return _layer("driver", "broken", evidence + self._text_ev(live),
                              "CUDA fails with error 802 while nvidia-smi works: on NVSwitch "
                              "systems (HGX/DGX) Fabric Manager must run - systemctl status "
                              "nvidia-fabricmanager on %s" % name)
            if mine:
                evidence.append(_ev("note", "older error texts name the driver, but nvidia-smi "
                                    "works on the node now: %s" % mine[0]["line"][:200]))
            return _layer("driver", "ok", evidence, "the host sees its GPUs; go on to the "
                          "container runtime")
        evidence += label_ev
        for line in lost[-3:]:
            evidence.append(_ev("%s kernel_xid (dmesg)" % fref, line))
        if lost:
            return _layer("driver", "broken", evidence + self._text_ev(mine),
                          "the kernel on %s says a GPU is gone (%s): drain the node, reset or "
                          "reseat the GPU" % (name, lost[-1][:120]))
        if mine:
            return _layer("driver", "broken", evidence + self._text_ev(mine),
                          "%s - caused at the driver on %s: %s" % (
                              mine[0]["what"], name, _driver_next(name, mine[0]["line"])))
        why = ("%s holds no nvidia-smi output" % fref) if facts is not None else \
            ("nvidia-smi was not run on %s (%s)" % (name, "no node facts" if self.src.kind == "live"
                                                    else "the %s has no %s" % (self.src.kind, fref)))
        told = self.src.missing_reason(name, "nvidia-smi-query.csv")
        if told:
            why += "; the collector says %s" % told
        evidence.append(_ev("note", "a driver label is neither proof of a driver (with the "
                            "NodeFeature API it outlives a dead driver) nor of its absence (in "
                            "file mode it vanishes for a minute on each GFD restart)"))
        return _layer("driver", "unknown", evidence, "run nvidia-smi on %s (gpu_node_facts over "
                      "SSH, or a support bundle's nodes/%s/nvidia-smi.txt)" % (name, name),
                      reason=why)

    def container_runtime(self, node, pod, texts):
        name = node["metadata"]["name"]
        evidence = []
        handler = None
        handler_known = True
        rc_name = ((pod or {}).get("spec") or {}).get("runtimeClassName")
        if rc_name:
            try:
                rc = self.src.runtimeclass(rc_name)
            except Unreadable as exc:
                rc, handler_known = None, False
                evidence.append(_ev(self.src.ref_rc(rc_name), "not readable here: %s" % exc.why))
            else:
                if rc is None:
                    return _layer("container-runtime", "broken", [_ev(
                        self.src.ref_rc(rc_name), "404 Not Found")],
                        "create RuntimeClass %s (handler: the runtime name in containerd's "
                        "config, e.g. nvidia)" % rc_name)
                handler = rc.get("handler")
                evidence.append(_ev("%s .handler" % self.src.ref_rc(rc_name), handler))
        elif pod is not None:
            evidence.append(_ev("Pod .spec.runtimeClassName", "<none>: containerd's default "
                                "runtime runs it"))
        facts = self.facts(name) or {}
        fref = self.src.ref_facts(name)
        mine = [t for t in texts if t["layer"] == "container-runtime"]
        running = facts.get("runtimes_running", facts.get("runtimes_loaded"))
        configured = facts.get("runtimes_configured")
        default = facts.get("default_runtime")
        cdi = facts.get("cdi_enabled")
        if facts.get("cri_error"):
            evidence.append(_ev("%s cri_error (crictl info)" % fref, facts["cri_error"]))
            for line in (facts.get("containerd_errors") or [])[-3:]:
                evidence.append(_ev("%s containerd_errors" % fref, line))
            return _layer("container-runtime", "broken", evidence,
                          "containerd's CRI service does not answer on %s (crictl info failed): "
                          "the kubelet cannot start any Pod there. Read containerd's log for "
                          "'failed to load plugin io.containerd.grpc.v1.cri' and fix the config "
                          "it names, then restart containerd" % name)
        if running is not None:
            evidence.append(_ev("%s runtimes_running (crictl info: the running daemon)" % fref,
                                list(running)))
        if configured is not None:
            evidence.append(_ev("%s runtimes_configured (containerd config dump: what the "
                                "files make the next start load)" % fref, list(configured)))
        if default:
            evidence.append(_ev("%s default_runtime" % fref, default))
        if cdi is not None:
            evidence.append(_ev("%s cdi_enabled" % fref, cdi))
        pending = _restart_pending(facts)
        if pending:
            evidence.append(_ev("finding", "restart pending on %s: %s" % (name, pending)))
        # texts the running config contradicts are history, said as a note
        live_texts = []
        for t in mine:
            match = t["match"]
            if match.re.pattern.startswith("no runtime for") and running is not None and \
                    match.group(1) in running:
                evidence.append(_ev("note", "an older error says containerd lacked %s; the "
                                    "running daemon has it now: %s" % (match.group(1), t["line"][:200])))
            elif "CRI plugin is not serving" in t["what"] and running is not None:
                evidence.append(_ev("note", "an older containerd error: %s" % t["line"][:200]))
            else:
                live_texts.append(t)
        tev = self._text_ev(live_texts)
        if handler:
            if running is not None:
                if handler in running:
                    if live_texts:
                        return _layer("container-runtime", "broken", evidence + tev,
                                      "%s: %s" % (live_texts[0]["what"], _runtime_next(
                                          name, live_texts[0])))
                    return _layer("container-runtime", "ok", evidence, "containerd runs with "
                                  "the %s runtime loaded; go on to the device plugin%s" % (
                                      handler, " (restart pending: %s)" % pending if pending else ""))
                if configured is not None and handler in configured:
                    return _layer("container-runtime", "broken", evidence + tev,
                                  "the files give containerd the %s runtime but the running "
                                  "daemon does not have it: a restart is pending (the drop-in "
                                  "was written, containerd never restarted). On %s: systemctl "
                                  "restart containerd - after checking `containerd config dump` "
                                  "still lists runc" % (handler, name))
                return _layer("container-runtime", "broken", evidence + tev,
                              "containerd on %s has not loaded the %s runtime: check the drop-in "
                              "is imported and merged (containerd_merge), then restart "
                              "containerd - a Pod with this RuntimeClass fails with 'no runtime "
                              "for \"%s\" is configured'" % (name, handler, handler))
            if configured is not None and handler not in configured:
                return _layer("container-runtime", "broken", evidence + tev,
                              "not even containerd's files on %s define the %s runtime (config "
                              "dump); the running daemon was not asked (crictl info). Add the "
                              "runtime (nvidia-ctk runtime configure --runtime=containerd) and "
                              "restart containerd" % (name, handler))
            if live_texts:
                return _layer("container-runtime", "broken", evidence + tev, "%s: %s" % (
                    live_texts[0]["what"], _runtime_next(name, live_texts[0])))
            if configured is not None:
                return _layer("container-runtime", "unknown", evidence,
                              "the files define %s; ask the running daemon with `crictl info` "
                              "on %s (a restart may be pending)" % (handler, name),
                              reason="only the files were read, not the running containerd")
            told = self.src.missing_reason(name, "crictl-info.json")
            return _layer("container-runtime", "skipped", evidence,
                          "on %s run `crictl info` (and `containerd config dump`) - the "
                          "gpu_node_facts role over SSH, or a support bundle" % name,
                          reason="what the running containerd holds can only be read on the node"
                          + ("; the collector says %s" % told if told else ""))
        if rc_name and not handler_known:
            if live_texts:
                return _layer("container-runtime", "broken", evidence + tev, "%s: %s" % (
                    live_texts[0]["what"], _runtime_next(name, live_texts[0])))
            return _layer("container-runtime", "unknown", evidence, "the RuntimeClass %s could "
                          "not be read here; give its handler" % rc_name,
                          reason="the RuntimeClass is not in this source")
        # no handler: the default runtime and CDI decide
        binaries = facts.get("runtime_binaries") or {}
        nvidia_default = bool(default) and ("nvidia" in default.lower()
                                            or "nvidia" in binaries.get(default, "").lower())
        nvidia_loaded = [r for r in running or [] if "nvidia" in r.lower()]
        if live_texts:
            return _layer("container-runtime", "broken", evidence + tev, "%s: %s" % (
                live_texts[0]["what"], _runtime_next(name, live_texts[0])))
        if nvidia_default:
            return _layer("container-runtime", "ok", evidence, "containerd's default runtime %s "
                          "is NVIDIA's: Pods without a RuntimeClass get the GPU; go on to the "
                          "device plugin" % default)
        if cdi:
            return _layer("container-runtime", "ok", evidence, "CDI is on in the running "
                          "containerd: the plugin's CDI devices reach Pods without a "
                          "RuntimeClass (the GPU Operator's default since v25.10); go on to the "
                          "device plugin")
        if pod is None:
            if nvidia_loaded:
                return _layer("container-runtime", "ok", evidence, "containerd runs with %s "
                              "loaded for Pods whose RuntimeClass names it; its default is %s "
                              "and CDI is %s" % (", ".join(nvidia_loaded), default or "unknown",
                                                 {True: "on", False: "off"}.get(cdi, "unknown")))
            if running is not None and cdi is False:
                planned = [r for r in configured or [] if "nvidia" in r.lower()]
                if planned:
                    return _layer("container-runtime", "broken", evidence, "containerd on %s "
                                  "runs without an NVIDIA runtime and with CDI off; the files give "
                                  "it %s but the daemon never restarted (restart pending)%s" % (
                                      name, ", ".join(planned),
                                      " - and the next start drops runc, which its "
                                      "default_runtime_name needs: fix the drop-in (merge it "
                                      "with the main config, containerd_merge) before restarting"
                                      if "runc" in running and "runc" not in (configured or [])
                                      else ": systemctl restart containerd"))
                return _layer("container-runtime", "broken", evidence, "containerd on %s has no "
                              "NVIDIA runtime loaded and CDI off: no container there gets a GPU "
                              "(nvidia-ctk runtime configure --runtime=containerd, restart "
                              "containerd)" % name)
        elif default and cdi is False:
            return _layer("container-runtime", "broken", evidence,
                          "the Pod has no runtimeClassName, so containerd's default runtime %s "
                          "runs it - not NVIDIA's - and CDI is off: the container gets no GPU. "
                          "Give the Pod runtimeClassName: %s, or make NVIDIA's runtime the "
                          "default, or enable CDI (enable_cdi, containerd 1.7+)" % (
                              default, nvidia_loaded[0] if nvidia_loaded else "nvidia"))
        if not facts or (running is None and configured is None):
            told = self.src.missing_reason(name, "crictl-info.json")
            return _layer("container-runtime", "skipped", evidence,
                          "on %s run `crictl info` (gpu_node_facts over SSH, or a support "
                          "bundle's nodes/%s/crictl-info.json)" % (name, name),
                          reason="what the running containerd holds can only be read on the node"
                          + ("; the collector says %s" % told if told else ""))
        missing = [k for k, v in (("the default runtime", default), ("CDI", cdi)) if v is None]
        return _layer("container-runtime", "unknown", evidence,
                      "without a RuntimeClass the default runtime and CDI decide; %s could not "
                      "be read (crictl info on %s)" % (" and ".join(missing) or "neither", name),
                      reason="%s unknown" % " and ".join(missing or ["the default runtime"]))

    def device_plugin(self, node, pod, texts):
        name = node["metadata"]["name"]
        selector_text = " | ".join(self.dp_selectors)
        refs = [self.src.ref_pods(s, self.dp_namespace) for s in self.dp_selectors]
        source = "%s (spec.nodeName=%s)" % (" + ".join(refs), name)
        try:
            everything = [p for p in self.plugin_pods()
                          if (p.get("spec") or {}).get("nodeName") == name]
        except Unreadable as exc:
            return _layer("device-plugin", "skipped", [_ev(source, "not readable: %s" % exc.why)],
                          "give the cluster's Pods (kubectl get pods -A -o json)",
                          reason=exc.why)
        pods, others = [], []
        for p in everything:
            what = plugin_component(p)
            (others if what else pods).append((p, what))
        evidence = []
        for p, what in others:
            evidence.append(_ev("note", "%s/%s matches %s but is %s, not the device plugin" % (
                p["metadata"].get("namespace"), p["metadata"]["name"], selector_text, what)))
        facts = self.facts(name) or {}
        fref = self.src.ref_facts(name)
        sockets = facts.get("device_plugin_sockets")
        if sockets is None and "device_plugin_socket" in facts:
            sockets = ["<a socket>"] if facts["device_plugin_socket"] else []
        mine = [t for t in texts if t["layer"] == "device-plugin"]
        if not pods:
            evidence.insert(0, _ev(source, "no device-plugin Pod on %s" % name))
            evidence += self._daemonset_evidence(node)
            if sockets:
                evidence.append(_ev("note", "%s says the plugin socket exists on %s (%s), but no "
                                    "plugin Pod runs there: a stale socket file, judged by the "
                                    "cluster" % (fref, name, ", ".join(sockets))))
            return _layer("device-plugin", "broken", evidence,
                          "the device-plugin DaemonSet has no Pod on %s: check its nodeSelector/"
                          "affinity/tolerations against the node's labels and taints, and "
                          "`kubectl get ds -A -l %s`" % (name, self.dp_selectors[0]))
        broken = None
        for plugin, _what in pods:
            ns, pname = plugin["metadata"].get("namespace"), plugin["metadata"]["name"]
            phase = (plugin.get("status") or {}).get("phase")
            ready = condition(plugin, "Ready").get("status")
            mounted = _mounts_socket_dir(plugin)
            evidence.append(_ev(self.src.ref_pod(ns, pname), "phase=%s Ready=%s mounts %s: %s" % (
                phase, ready or "<unset>", SOCKET_DIR, "yes" if mounted else "no")))
            if phase != "Running" or ready != "True":
                broken = broken or ("the device-plugin Pod %s/%s is %s (Ready=%s): kubectl -n %s "
                                    "describe pod %s and its logs" % (ns, pname, phase, ready, ns,
                                                                      pname))
            elif not mounted:
                broken = broken or ("the device-plugin Pod %s/%s does not mount the hostPath %s: "
                                    "it cannot register with the kubelet - add the volume and "
                                    "volumeMount" % (ns, pname, SOCKET_DIR))
        if sockets is not None:
            evidence.append(_ev("%s device_plugin_sockets (nvidia-<resource>.sock in %s)" % (
                fref, SOCKET_DIR), sockets or "none"))
        if sockets == [] and not broken:
            evidence.append(_ev("note", "no nvidia-<resource>.sock on %s while a plugin Pod "
                                "runs there and mounts the folder; judged by the cluster - look "
                                "at the plugin's log" % name))
        lower = [t for t in texts if t["layer"] in ("driver", "container-runtime")
                 and "device-plugin" in t["source"]]
        for t in lower:
            evidence.append(_ev(t["source"], "%s -> caused at the %s layer" % (t["line"][:240],
                                                                               t["layer"])))
        if mine and not broken:
            evidence += self._text_ev(mine)
            broken = "%s: read the plugin's log on %s (kubectl logs) - %s" % (
                mine[0]["what"], name, mine[0]["line"][:200])
        elif mine:
            evidence += self._text_ev(mine)
        if broken:
            return _layer("device-plugin", "broken", evidence, broken)
        return _layer("device-plugin", "ok", evidence, "the plugin runs and mounts the kubelet's "
                      "socket folder; go on to what the node advertises")

    def advertisement(self, node, texts, request=None):
        name = node["metadata"]["name"]
        status = node.get("status") or {}
        labels = node["metadata"].get("labels") or {}
        ref = self.src.ref_node(name)
        cap = (status.get("capacity") or {}).get(self.resource)
        alloc = (status.get("allocatable") or {}).get(self.resource)
        evidence = [_ev("%s .status.capacity[%s]" % (ref, self.resource), cap or "<missing>"),
                    _ev("%s .status.allocatable[%s]" % (ref, self.resource), alloc or "<missing>")]
        if not status.get("capacity") and not status.get("allocatable") and \
                self.src.kind == "must-gather" and not cap:
            return _layer("node-advertisement", "unknown", evidence, "the must-gather's "
                          "gpu_nodes.descr lacks this node's status", reason="no node status here")
        facts = self.facts(name) or {}
        gpus = facts.get("gpus")
        mine = [t for t in texts if t["layer"] == "node-advertisement"]
        if not _amount(cap) or not _amount(alloc):
            return _layer("node-advertisement", "broken", evidence,
                          "the node does not advertise %s (capacity %s, allocatable %s): read the "
                          "kubelet log on %s for the plugin's registration (journalctl -u "
                          "kubelet | grep -i device)" % (self.resource, cap or "missing",
                                                         alloc or "missing", name))
        if gpus is not None and self.resource == "nvidia.com/gpu" and \
                labels.get("nvidia.com/mig.strategy", "none") != "mixed":
            replicas = _amount(labels.get("nvidia.com/gpu.replicas")) or 1
            evidence.append(_ev("%s gpus (nvidia-smi)" % self.src.ref_facts(name), len(gpus)))
            if _amount(cap) < len(gpus) * replicas:
                evidence.append(_ev("note", "capacity %s is below nvidia-smi's %d GPU(s) x %s "
                                    "replica(s): the plugin advertises fewer than the host sees"
                                    % (cap, len(gpus), _qty(replicas))))
        if _amount(alloc) < _amount(cap):
            unhealthy = _amount(cap) - _amount(alloc)
            evidence.append(_ev("finding", "%s of %s %s not allocatable: the plugin marked them "
                                "unhealthy (an Xid) or they are reserved" % (
                                    _qty(unhealthy), cap, self.resource)))
            for code, pci, line in xids(facts.get("kernel_xid")):
                if code not in APPLICATION_XIDS:
                    evidence.append(_ev("%s kernel_xid" % self.src.ref_facts(name), line[:200]))
            evidence += self._text_ev(mine)
            if request and _amount(alloc) < request <= _amount(cap):
                return _layer("node-advertisement", "broken", evidence,
                              "the Pod needs %s %s; %s has %s but only %s are healthy - the "
                              "scheduler's 'Insufficient' is caused here: find the Xid in the "
                              "kernel log (dmesg | grep NVRM) and the plugin's log, then reset "
                              "or replace the GPU" % (_qty(request), self.resource, name, cap,
                                                      alloc))
        if request and request > _amount(alloc):
            evidence.append(_ev("note", "the Pod asks for %s, more than the %s allocatable - a "
                                "scheduling finding, the advertisement itself is right"
                                % (_qty(request), alloc)))
        return _layer("node-advertisement", "ok", evidence,
                      "%s advertises %s %s; go on to the scheduler" % (name, alloc, self.resource))

    def scheduling(self, node, pod):
        name = node["metadata"]["name"]
        ref = self.src.ref_node(name)
        spec = node.get("spec") or {}
        taints = spec.get("taints") or []
        if pod is None:
            evidence = [_ev("%s .spec.unschedulable" % ref, bool(spec.get("unschedulable"))),
                        _ev("%s .spec.taints" % ref,
                            ["%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect"))
                             for t in taints] or "none")]
            ready = condition(node, "Ready").get("status")
            evidence.append(_ev("%s Ready condition" % ref, ready or "<unset>"))
            if ready is None and self.src.kind != "live":
                return _layer("scheduling", "unknown", evidence, "the node's conditions are not "
                              "in this source", reason="no Ready condition here")
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
        ns, pname = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        cond = condition(pod, "PodScheduled")
        source = "%s .status.conditions[PodScheduled]" % self.src.ref_pod(ns, pname)
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
                      "kubectl describe pod %s -n %s" % (pname, ns))

    def workload(self, pod, texts):
        if pod is None:
            return _layer("workload", "skipped", [], "give a Pod to judge a workload",
                          reason="no Pod given")
        status = pod.get("status") or {}
        phase = status.get("phase")
        ns, pname = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        source = self.src.ref_pod(ns, pname)
        evidence = [_ev(source + " .status.phase", phase)]
        if status.get("reason"):
            evidence.append(_ev(source + " .status.reason", "%s: %s" % (
                status["reason"], status.get("message", ""))))
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
        caused = [t for t in texts if "the Pod" in t["source"] and t["layer"] != "workload"]
        for t in caused:
            evidence.append(_ev(t["source"], "%s -> caused at the %s layer" % (t["line"][:240],
                                                                               t["layer"])))
        if phase == "Failed" or bad:
            where = " - caused at the %s layer (see there)" % caused[0]["layer"] if caused else ""
            return _layer("workload", "broken", evidence,
                          "the container itself fails (%s)%s: kubectl logs %s -n %s --previous; "
                          "a 'no CUDA-capable device' inside means the GPU was not handed in" % (
                              "; ".join(bad) or phase, where, pname, ns))
        if phase in ("Running", "Succeeded"):
            return _layer("workload", "ok", evidence, "the workload runs; look at its own logs "
                          "and metrics for anything further")
        return _layer("workload", "unknown", evidence, "the Pod is %s: watch it" % phase,
                      reason="phase %s" % phase)

    def _daemonset_evidence(self, node):
        """What the plugin's DaemonSets say about this node: desired/ready, and whether their
        Pod template's nodeSelector and required affinity admit it."""
        out = []
        try:
            sets = self.src.daemonsets()
        except Unreadable:
            return out
        matchers = [parse_selector(s) for s in self.dp_selectors]
        for ds in sets:
            template = (ds.get("spec") or {}).get("template") or {}
            labels = (template.get("metadata") or {}).get("labels") or {}
            if not any(m(labels) for m in matchers) or plugin_component(template):
                continue
            status = ds.get("status") or {}
            admits = node_admits(template, node)
            taints = [t for t in (node.get("spec") or {}).get("taints") or []
                      if t.get("effect") in ("NoSchedule", "NoExecute") and not any(
                          _tolerates(tol, t) for tol in (template.get("spec") or {}).get("tolerations") or [])]
            out.append(_ev("%s [%s/%s]" % (self.src.ref_daemonsets(), ds["metadata"].get("namespace"),
                                           ds["metadata"]["name"]),
                           "desired %s, ready %s; its nodeSelector/affinity %s %s%s" % (
                               status.get("desiredNumberScheduled", "?"), status.get("numberReady", "?"),
                               "admit" if admits else "exclude", node["metadata"]["name"],
                               "; untolerated taint(s) %s" % ", ".join(t.get("key", "") for t in taints)
                               if taints else "")))
        return out

    @staticmethod
    def _text_ev(found):
        return [_ev(t["source"], t["line"]) for t in found[:4]]

    # ----------------------------------------------------------------- walk
    def walk_node(self, node, pod=None):
        request = pod_request(pod, self.resource) if pod else None
        name = node["metadata"]["name"]
        try:
            plugins = [p for p in self.plugin_pods() if (p.get("spec") or {}).get("nodeName") == name
                       and not plugin_component(p)]
        except Unreadable:
            plugins = []
        texts = self.texts(node, pod, plugins)
        return [self.driver(node, texts), self.container_runtime(node, pod, texts),
                self.device_plugin(node, pod, texts), self.advertisement(node, texts, request),
                self.scheduling(node, pod), self.workload(pod, texts)]

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
                    namespace, pod_name, self.src.ref_pod(namespace, pod_name)))
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
                "pod": "%s/%s" % (namespace, pod_name) if pod else None, "source": self.src.kind,
                "limits": self.src.limits()}


def _restart_pending(facts):
    """What differs between the running daemon and the files, or None."""
    running = facts.get("runtimes_running", facts.get("runtimes_loaded"))
    configured = facts.get("runtimes_configured")
    parts = []
    if running is not None and configured is not None and set(running) != set(configured):
        added = sorted(set(configured) - set(running))
        dropped = sorted(set(running) - set(configured))
        if added:
            parts.append("the next start adds %s" % ", ".join(added))
        if dropped:
            parts.append("the next start drops %s" % ", ".join(dropped))
    if facts.get("default_runtime") and facts.get("default_runtime_configured") and \
            facts["default_runtime"] != facts["default_runtime_configured"] and \
            "runtimes_running" in facts:
        parts.append("the default runtime changes from %s to %s" % (
            facts["default_runtime"], facts["default_runtime_configured"]))
    if not parts and facts.get("restart_pending"):
        parts.append("the files differ from the running daemon")
    if parts and configured is not None and "runc" in (running or []) and "runc" not in configured:
        parts.append("with runc gone from the files, the CRI plugin of containerd 1.6/1.7 fails to "
                     "load on restart when default_runtime_name is runc")
    return "; ".join(parts) or None


def _driver_next(name, text):
    low = (text or "").lower()
    if "version mismatch" in low:
        return ("on %s the NVIDIA kernel module and the user-space library differ (a driver "
                "upgrade without reboot): reboot, or unload and reload the nvidia modules" % name)
    if "gpu is lost" in low or "fallen off the bus" in low:
        return ("on %s a GPU fell off the bus (Xid 79): drain the node, reset or reseat the GPU, "
                "check power/thermals/PCIe" % name)
    if "no devices were found" in low or "no devices found" in low:
        return ("on %s the driver lists no GPU: check lspci | grep -i nvidia, the kernel log "
                "(dmesg | grep NVRM) and MIG mode" % name)
    if "802" in low or "not yet initialized" in low:
        return ("Fabric Manager: systemctl status nvidia-fabricmanager on %s" % name)
    return ("on %s: run nvidia-smi and check the kernel module (lsmod | grep nvidia; dkms status) "
            "- a kernel update needs the driver rebuilt for the new kernel; with the GPU "
            "Operator see the nvidia-driver-daemonset Pod's log" % name)


def _runtime_next(name, finding):
    what = finding["what"]
    if "CDI spec" in what:
        return ("on %s generate the CDI spec (nvidia-ctk cdi generate --output=/var/run/cdi/"
                "nvidia.yaml, or the toolkit/Operator's cdi settings) and check cdi_spec_dirs"
                % name)
    if "no runtime of that name" in what:
        return ("containerd on %s lacks runtime %s: configure it (nvidia-ctk runtime configure) "
                "and restart containerd" % (name, finding["match"].group(1)))
    if "no NVIDIA driver libraries" in what:
        return ("on %s give the plugin's Pod NVIDIA's runtime (runtimeClassName: nvidia, or "
                "nvidia as containerd's default) or enable CDI" % name)
    return "on %s check containerd's NVIDIA runtime and the toolkit (%s)" % (name, finding["line"][:120])


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
    if result.get("limits"):
        lines[4:4] = ["Read from a %s; it cannot hold: %s." % (result.get("source"), "; ".join(
            result["limits"])), ""]
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
