# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU Pod by ResourceClaim (Dynamic Resource Allocation, issue 48): the layers that differ.

A Pod that asks for its GPU through ``spec.resourceClaims`` (or whose ``nvidia.com/gpu`` the
scheduler turned into a claim through a DeviceClass's ``extendedResourceName``) is served by a DRA
driver, not a device plugin: the walk (walk.Diagnosis) reads its claims, the node's
ResourceSlices and the DRA kubelet plugin's Pods on the node into ``seen.dra`` (a :class:`Dra`),
and these rules judge three layers in place of the device plugin's:

- container-runtime (:func:`cdi`): the kubelet hands a prepared claim's devices to containerd as
  CDI device ids; containerd applies them only with CDI (``enableCDI`` in ``crictl info``, 1.7 and
  2.x). containerd 1.6 has no CDI: the container starts without its GPU and nothing fails. Its
  evidence: each claim's allocation (device and request), the claim's CDI spec on the node and the
  device nodes it would add (node facts ``cdi_specs``), what ``crictl info`` says of CDI, and the
  ``/dev/nvidia*`` nodes the Pod's containers have (``container_devices``: ``crictl inspect``) -
  or, without those, the Pod's own words about its GPU (its log).
- device-plugin, here the DRA kubelet plugin (:func:`kubelet_plugin`): its Pod on the node
  (NVIDIA's chart labels it ``app.kubernetes.io/name=dra-driver-nvidia-gpu``), Running and Ready,
  and its own words (``plugin_registered:true``, the prepare errors).
- node-advertisement (:func:`slices`): the node's ResourceSlices - the devices the driver
  publishes (node allocatable has no ``nvidia.com/gpu`` with DRA); against the claims' allocation.

Scheduling keeps its rule (the scheduler's DRA words, "cannot allocate all claims", are in the
Pod's PodScheduled message) with the claims' allocation added as evidence (:func:`claims_evidence`).
"""

import os
import re

from ansible.module_utils.diagnosis.verdict import ev, verdict
from ansible.module_utils.kube.client import condition

# the DRA drivers for GPUs the walk knows, by the driver name their slices and claims carry, and
# the labels of their kubelet plugin's Pods (NVIDIA's chart, deployments/helm/dra-driver-nvidia-gpu)
DRA_DRIVER = "gpu.nvidia.com"
DRA_PLUGIN_SELECTORS = ["app.kubernetes.io/name=dra-driver-nvidia-gpu"]
# what the chart's kubelet plugin logs once the kubelet registered it (driver.go)
REGISTERED = "plugin_registered:true"
# what the kubelet says when the plugin's NodePrepareResources failed (the Pod's events)
PREPARE_FAILED = "FailedPrepareDynamicResources"
# the scheduler's words when no published device satisfies a claim (its DynamicResources plugin)
CANNOT_ALLOCATE = "cannot allocate all claims"
# a Pod's log lines about its GPU: what it says when it has none ("nvidia-smi: not found",
# "ls: /dev/nvidia*: No such file or directory") or which it has (tests/diagnosis_corpus/dra-lab-node-2)
GPU_WORDS = re.compile(r"/dev/nvidia|nvidia-smi|NVIDIA-SMI|No devices were found|CUDA-capable", re.I)


def claim_names(pod):
    """The ResourceClaims a Pod uses: those made from its templates and by the scheduler for an
    extended resource (status), and those it names directly (spec)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    names = [s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []]
    names += [c.get("resourceClaimName") for c in spec.get("resourceClaims") or []]
    names.append((status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))
    out = []
    for name in names:
        if name and name not in out:
            out.append(name)
    return out


def uses_claims(pod):
    """Does the Pod get its devices by ResourceClaim?"""
    spec, status = (pod or {}).get("spec") or {}, (pod or {}).get("status") or {}
    return bool(spec.get("resourceClaims") or status.get("extendedResourceClaimStatus"))


class Dra(object):
    """What the walk read for a claim-based Pod on one node: claims [(name, object or None, why the
    source cannot hold it or None)],
    slices (the node's ResourceSlices; None with slices_why), plugin_pods (the DRA kubelet
    plugin's Pods on the node; None with plugin_why), logs {pod name: its log}, pod_words (the
    Pod's own log lines about its GPU, GPU_WORDS; [] when none or not read)."""

    def __init__(self, claims, slices, slices_why, plugin_pods, plugin_why, logs, pod_words=None):
        self.claims, self.slices, self.slices_why = claims, slices, slices_why
        self.plugin_pods, self.plugin_why, self.logs = plugin_pods, plugin_why, logs
        self.pod_words = pod_words or []

    def allocated(self):
        """[(claim, driver, pool, device)] of the claims' allocations."""
        out = []
        for name, obj, _why in self.claims:
            results = ((((obj or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
            out += [(name, r.get("driver"), r.get("pool"), r.get("device")) for r in results]
        return out

    def devices(self):
        """{device name: device} of the node's slices (all drivers)."""
        return {d.get("name"): d for s in self.slices or [] for d in (s.get("spec") or {}).get("devices") or []}


def claims_evidence(seen):
    """The claims' allocation as evidence (which device of which driver, or not allocated)."""
    dra, where = seen.dra, seen.where
    ns = seen.pod["metadata"].get("namespace")
    out = []
    for name, obj, why in dra.claims:
        ref = where.claim(ns, name)
        if obj is None:
            out.append(ev(ref, "not readable: %s" % why if why else "not found"))
            continue
        results = (((obj.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        out.append(ev(ref + " .status.allocation", ", ".join("%s/%s/%s (request %s)" % (
            r.get("driver"), r.get("pool"), r.get("device"), r.get("request") or "?") for r in results) or "not allocated"))
    return out


def _paths(listed):
    """A list of names or paths of the node facts, as strings ([] for anything else)."""
    return [str(p) for p in listed] if isinstance(listed, list) else []


def _claim_specs(seen):
    """(evidence, the device nodes the claims' CDI specs add) from the node facts' cdi_specs: the
    spec of each claim - NVIDIA's DRA driver writes <dir>/k8s.gpu.nvidia.com-claim_<claim uid>.yaml,
    its devices named <claim uid>-<device> (node/cdi.py); ([], None) when the specs were not read."""
    specs = (seen.facts or {}).get("cdi_specs")
    if not isinstance(specs, dict):
        return [], None
    fref = seen.where.facts(seen.name)
    out, nodes = [], []
    for name, obj, _why in seen.dra.claims:
        uid = ((obj or {}).get("metadata") or {}).get("uid")
        if not uid:
            continue
        mine = [s for s in specs.get("specs") or [] if isinstance(s, dict) and (
            uid in os.path.basename(str(s.get("file") or ""))
            or any(str(d.get("name") or "").startswith(uid) for d in s.get("devices") or [] if isinstance(d, dict)))]
        if not mine:
            read = ", ".join("%s (%s)" % (d.get("dir"), d.get("state")) for d in specs.get("dirs") or []
                             if isinstance(d, dict)) or "no folder"
            out.append(ev("%s cdi_specs" % fref, "no CDI spec of claim %s (uid %s) in %s: the DRA kubelet plugin "
                          "writes it when the kubelet prepares the claim (NVIDIA's: /var/run/cdi/"
                          "k8s.gpu.nvidia.com-claim_%s.yaml)" % (name, uid, read, uid)))
        for spec in mine:
            if spec.get("error"):
                out.append(ev("%s cdi_specs %s" % (fref, spec.get("file")), "not read: %s" % spec["error"]))
                continue
            listed = [d for d in spec.get("devices") or [] if isinstance(d, dict)]
            devices = [d for d in listed if str(d.get("name") or "").startswith(uid)] or listed
            adds = ["device %s adds %s" % (d.get("name"), ", ".join(_paths(d.get("device_nodes"))) or "no device node")
                    for d in devices]
            common = _paths(spec.get("device_nodes"))
            out.append(ev("%s cdi_specs %s" % (fref, spec.get("file")), "claim %s: kind %s, cdiVersion %s: %s%s" % (
                name, spec.get("kind"), spec.get("cdiVersion"), "; ".join(adds) or "no device",
                "; with it the spec adds %s" % ", ".join(common) if common else "")))
            for node in [n for d in devices for n in _paths(d.get("device_nodes"))] + common:
                if node not in nodes:
                    nodes.append(node)
    return out, nodes


def _container_devices(seen, wanted):
    """(evidence, findings) of the Pod's containers' /dev/nvidia* nodes (node facts
    container_devices, crictl inspect) against `wanted` (what the claims' CDI specs add, or None);
    without them, the Pod's own words about its GPU."""
    listed = (seen.facts or {}).get("container_devices")
    ns, pod = seen.pod["metadata"].get("namespace"), seen.pod["metadata"]["name"]
    fref = seen.where.facts(seen.name)
    out, findings = [], []
    mine = [c for c in listed or [] if isinstance(c, dict) and c.get("pod") == "%s/%s" % (ns, pod)]
    for c in mine:
        has = _paths(c.get("devices"))
        source = "%s container_devices [%s] (crictl inspect %s: .info.runtimeSpec.linux.devices)" % (
            fref, c.get("container"), c.get("id"))
        value = ", ".join(has) or "no /dev/nvidia* device"
        if wanted:
            value += " - the claim's CDI spec adds %s" % ", ".join(wanted)
        out.append(ev(source, value))
        if "cdi_devices" in c:
            out.append(ev("%s container_devices [%s] (crictl inspect %s: .info.config.CDI_devices)" % (
                fref, c.get("container"), c.get("id")), ", ".join(_paths(c["cdi_devices"])) or "none"))
        missing = [n for n in wanted or [] if n not in has]
        if missing:
            findings.append(ev("finding", "container %s of %s/%s has %s of the device nodes its claim's CDI spec "
                               "adds (%s not there)" % (c.get("container"), ns, pod,
                                                        "none" if len(missing) == len(wanted) else "not all",
                                                        ", ".join(missing))))
    if listed is not None and not mine:
        out.append(ev("%s container_devices" % fref, "no running container of %s/%s (crictl ps)" % (ns, pod)))
    if listed is None:
        out += [ev("%s (the Pod's own words)" % seen.where.log(ns, pod), line) for line in seen.dra.pod_words[-3:]]
    return out, findings


def _crictl_cdi(seen, absent):
    """What crictl info says of CDI, as evidence."""
    facts = seen.facts or {}
    dirs = facts.get("cdi_spec_dirs")
    if absent:
        said = "no enableCDI and no cdiSpecDirs: the running containerd knows no CDI (1.6)"
    else:
        said = "enableCDI %s%s" % ({True: "true", False: "false"}.get(facts.get("cdi_enabled"), "?"),
                                   ", cdiSpecDirs %s" % ", ".join(dirs) if dirs else "")
    return ev("%s cdi_enabled (crictl info .config)" % seen.where.facts(seen.name), said)


def cdi(seen, daemon, evidence):
    """container-runtime for a claim-based Pod: does the running containerd apply CDI devices?
    None when the facts say nothing of CDI (the caller judges as usual)."""
    facts = seen.facts or {}
    allocated = seen.dra.allocated()
    evidence += claims_evidence(seen)
    # crictl info of containerd 1.7 and 2.x names its CDI spec folders even with CDI off;
    # 1.6's has neither enableCDI nor cdiSpecDirs (node/artefacts.py reads that as CDI off)
    absent = bool(facts.get("cdi_absent") or "cdi_spec_dirs" not in facts)
    specs, wanted = _claim_specs(seen)
    devices, findings = _container_devices(seen, wanted)
    if daemon.cdi is not None:
        evidence.append(_crictl_cdi(seen, daemon.cdi is False and absent))
    evidence += specs + devices
    if daemon.cdi:
        return verdict("container-runtime", "ok", evidence + [ev("note", f["value"]) for f in findings],
                       "CDI is on in the running containerd: the devices the kubelet prepares for the "
                       "Pod's claims reach its containers; go on to the DRA kubelet plugin")
    if daemon.cdi is False or facts.get("cdi_absent"):
        evidence += findings
        what = ("the running containerd knows no CDI (crictl info has no enableCDI and no cdiSpecDirs: "
                "containerd 1.6)" if absent else "the running containerd has CDI off (enableCDI false)")
        state = "allocated (%s)" % ", ".join(d for _c, _dr, _p, d in allocated) if allocated else "not allocated yet"
        return verdict("container-runtime", "broken", evidence,
                       "%s: the kubelet hands containerd the Pod's claim as CDI devices and it drops them - "
                       "the claim is %s, the Pod may be Running, and its containers have no GPU. Run the node on "
                       "containerd 1.7+ with enable_cdi = true (2.x: on by default)" % (what, state))
    return None


def kubelet_plugin(seen):
    """device-plugin layer for a claim-based Pod: the DRA kubelet plugin on the node."""
    dra, name, where = seen.dra, seen.name, seen.where
    source = "%s (spec.nodeName=%s)" % (" + ".join(where.pods(s, None) for s in DRA_PLUGIN_SELECTORS), name)
    if dra.plugin_why is not None:
        return verdict("device-plugin", "skipped", [ev(source, "not readable: %s" % dra.plugin_why)],
                       "give the cluster's Pods (kubectl get pods -A -o json)", reason=dra.plugin_why)
    evidence = [ev("the Pod's devices", "by ResourceClaim (DRA): a DRA driver's kubelet plugin serves them, "
                                        "not a device plugin")]
    if not dra.plugin_pods:
        evidence.append(ev(source, "no DRA kubelet plugin Pod on %s" % name))
        return verdict("device-plugin", "broken", evidence,
                       "deploy the DRA driver's kubelet plugin to %s (NVIDIA's chart: its DaemonSet "
                       "<release>-kubelet-plugin; its nodeSelector and affinity must admit the node)" % name)
    problems = []
    for pod in dra.plugin_pods:
        ns, pname = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        status = pod.get("status") or {}
        ready = condition(pod, "Ready").get("status")
        evidence.append(ev(where.pod(ns, pname), "phase %s, Ready %s" % (status.get("phase"), ready or "<unset>")))
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            kind = next(iter(state), "unknown")
            if kind != "running" and not (kind == "terminated" and not (state.get(kind) or {}).get("exitCode")):
                evidence.append(ev("containerStatuses[%s]" % cs.get("name"), "%s %s" % (
                    kind, (state.get(kind) or {}).get("reason") or "")))
        log = dra.logs.get(pname)
        if log is not None:
            said = [line.strip() for line in log.splitlines() if REGISTERED in line or " E" in line[:2]]
            evidence.append(ev(where.log(ns, pname), said[-1][:300] if said else "(no registration line in its last lines)"))
            if not any(REGISTERED in line for line in said) and status.get("phase") == "Running":
                evidence.append(ev("note", "the plugin has not said %s in the lines read" % REGISTERED))
        if status.get("phase") != "Running" or ready != "True":
            problems.append("%s/%s is %s, Ready %s" % (ns, pname, status.get("phase"), ready or "<unset>"))
    failed = [t for t in seen.texts if PREPARE_FAILED in t.get("line", "") or "NodePrepareResources" in t.get("line", "")]
    for t in failed[:2]:
        evidence.append(ev(t["source"], t["line"][:300]))
    if problems:
        return verdict("device-plugin", "broken", evidence,
                       "the DRA kubelet plugin does not run on %s: %s - read its log and its init "
                       "container's (the chart's prestart check of the driver)" % (name, "; ".join(problems)))
    if failed:
        return verdict("device-plugin", "broken", evidence,
                       "the kubelet could not prepare the claim through the DRA kubelet plugin: read the "
                       "event above and the plugin's log")
    return verdict("device-plugin", "ok", evidence,
                   "the DRA kubelet plugin runs on %s; go on to what it publishes (ResourceSlices)" % name)


def slices(seen):
    """node-advertisement for a claim-based Pod: the node's ResourceSlices."""
    dra, name, where = seen.dra, seen.name, seen.where
    source = "%s (spec.nodeName=%s)" % (where.slices(), name)
    if dra.slices is None:
        return verdict("node-advertisement", "skipped", [ev(source, "not readable: %s" % dra.slices_why)],
                       "give the cluster's ResourceSlices (kubectl get resourceslices -o json)", reason=dra.slices_why)
    devices = dra.devices()
    drivers = sorted({(s.get("spec") or {}).get("driver") for s in dra.slices})
    names = ", ".join(sorted(devices)) or "no device"
    published = "%d slice(s) of %s: %s" % (len(dra.slices), ", ".join(d or "?" for d in drivers) or "no driver", names)
    evidence = [ev(source, published),
                ev("%s .status.allocatable" % where.node(name), "no %s: devices by ResourceClaim are published "
                   "as ResourceSlices, not in node status" % seen.resource)]
    if not devices:
        return verdict("node-advertisement", "broken", evidence,
                       "no device of %s is published for %s: the DRA kubelet plugin publishes them once it "
                       "sees the GPUs - read its log" % (DRA_DRIVER, name))
    missing = [(c, d) for c, _driver, pool, d in dra.allocated() if pool == name and d not in devices]
    for claim, device in missing:
        evidence.append(ev("finding", "claim %s is allocated device %s, which no slice of %s publishes now" % (
            claim, device, name)))
    if missing:
        return verdict("node-advertisement", "broken", evidence,
                       "the claim names a device the node no longer publishes: delete the Pod so its claim is "
                       "allocated again")
    return verdict("node-advertisement", "ok", evidence,
                   "%s publishes %d device(s); go on to scheduling (the claims' allocation)" % (name, len(devices)))


def scheduling_findings(seen, message):
    """(evidence, findings) the claims add to a Pod the scheduler did not place: each claim's
    requests (class, selectors) and, on the scheduler's DRA words, what to compare."""
    evidence = claims_evidence(seen)
    for name, obj, _why in seen.dra.claims:
        for request in (((obj or {}).get("spec") or {}).get("devices") or {}).get("requests") or []:
            exactly = request.get("exactly") or request
            cel = [((sel.get("cel") or {}).get("expression")) for sel in exactly.get("selectors") or []]
            evidence.append(ev("%s request %s" % (seen.where.claim(seen.pod["metadata"].get("namespace"), name),
                                                  request.get("name")),
                               "class %s%s" % (exactly.get("deviceClassName"),
                                               "; selectors: " + " && ".join(c for c in cel if c) if any(cel) else "")))
    findings = []
    if CANNOT_ALLOCATE in message:
        findings.append("no device published in ResourceSlices satisfies the Pod's claims (%s): compare the "
                        "requests' class and selectors above with the devices' attributes and capacity "
                        "(kubectl get resourceslices -o yaml)" % ", ".join(n for n, _o, _w in seen.dra.claims))
    return evidence, findings
