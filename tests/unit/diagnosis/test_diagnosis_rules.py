"""Each diagnosis rule alone: what the source saw (a Seen) -> the verdict, its evidence, its reason.

One parametrized table per rule of LAYERS (host_layers.driver, host_layers.container_runtime,
plugin_layers.device_plugin, plugin_layers.advertisement, pod_layers.scheduling,
pod_layers.workload), one row per branch of the rule, so a change of any branch fails here
without a bundle or a cluster. A row gives the Seen's fields that differ from a plain node
(`see`), the exact status and reason, fragments of `next`, and evidence items
(source, value) that must be in the verdict - a value wrapped in Has() is a fragment.
The error texts are made by texts.text_findings from real lines, as the walk makes them.
"""
import pytest

from ansible.module_utils.diagnosis import host_layers, plugin_layers, pod_layers
from ansible.module_utils.diagnosis.kube_objects import DRIVER_LABELS, PLUGIN_SELECTORS
from ansible.module_utils.diagnosis.texts import text_findings
from ansible.module_utils.diagnosis.walk import Seen

NODE = "n1"
FACTS = "node_facts[n1]"
PODS = " + ".join("Pods %s" % s for s in PLUGIN_SELECTORS) + " (spec.nodeName=n1)"
PLUGIN_EVENTS = "events of gpu-operator/dp-1 (device-plugin Pod)"
POD_EVENTS = "events of ml/p (the Pod)"
KUBELET = "node_facts[n1]kubelet.log"
LOST = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
XID48 = "NVRM: Xid (PCI:0000:3b:00): 48, pid=0, DBE (Double Bit Error) ECC Error"
XID13 = "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, Graphics SM Warp Exception"


class Has(str):
    """An evidence value that must contain this fragment (not equal it)."""


class Where(object):
    """The source's names, as the base Source spells them; kind decides a few wordings."""

    def __init__(self, kind="bundle"):
        self.kind = kind
        self.daemonsets = "DaemonSets"

    @staticmethod
    def node(name):
        return "node %s" % name

    @staticmethod
    def pod(namespace, name):
        return "Pod %s/%s" % (namespace, name)

    @staticmethod
    def pods(selector, namespace=None):
        return "Pods %s" % selector

    @staticmethod
    def rc(name):
        return "RuntimeClass %s" % name

    @staticmethod
    def facts(name):
        return "node_facts[%s]" % name


def node(labels=None, cap="2", alloc=None, ready="True", taints=None, cordoned=False, status=True):
    spec = {}
    if taints:
        spec["taints"] = taints
    if cordoned:
        spec["unschedulable"] = True
    base = {"nvidia.com/gpu.count": "2", "nvidia.com/cuda.driver-version.full": "550.54.15"}
    out = {"metadata": {"name": NODE, "labels": dict(base, **(labels or {}))}, "spec": spec}
    if status:
        out["status"] = {"capacity": {"nvidia.com/gpu": cap} if cap is not None else {},
                         "allocatable": {"nvidia.com/gpu": alloc if alloc is not None else cap}
                         if cap is not None or alloc is not None else {},
                         "conditions": [{"type": "Ready", "status": ready}] if ready else []}
    return out


def pod(bound=True, phase="Running", states=None, tolerations=None, scheduled=None, gpus=1,
        reason=None):
    spec = {"containers": [{"name": "cuda", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
    if bound:
        spec["nodeName"] = NODE
    if tolerations:
        spec["tolerations"] = tolerations
    status = {"phase": phase, "conditions": [scheduled] if scheduled else []}
    if reason:
        status.update(reason=reason, message="the node was low on resource")
    if states is not None:
        status["containerStatuses"] = states
    return {"metadata": {"namespace": "ml", "name": "p"}, "spec": spec, "status": status}


def state(kind="running", ready=True, restarts=0, **detail):
    return {"name": "cuda", "ready": ready, "restartCount": restarts,
            "state": {kind: detail} if kind else {}}


def plugin_pod(name="dp-1", phase="Running", ready="True", mounted=True, container="nvidia-device-plugin-ctr"):
    volume = {"name": "dp", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}
    return {"metadata": {"namespace": "gpu-operator", "name": name,
                         "labels": {"app": "nvidia-device-plugin-daemonset"}},
            "spec": {"nodeName": NODE, "volumes": [volume],
                     "containers": [{"name": container,
                                     "volumeMounts": [{"name": "dp", "mountPath": "/var/lib/kubelet/device-plugins"}]
                                     if mounted else []}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}}


def deleting(pod, when="2026-12-05T10:00:00Z"):
    """The Pod as the API shows it once deleted and until its containers stopped."""
    pod["metadata"]["deletionTimestamp"] = when
    return pod


def daemonset(name="dp", labels=None, node_selector=None, tolerations=None, container="nvidia-device-plugin-ctr"):
    template = {"metadata": {"labels": labels or {"app": "nvidia-device-plugin-daemonset"}},
                "spec": {"containers": [{"name": container}], "nodeSelector": node_selector or {},
                         "tolerations": tolerations or []}}
    return {"metadata": {"namespace": "gpu-operator", "name": name}, "spec": {"template": template},
            "status": {"desiredNumberScheduled": 1, "numberReady": 0}}


def said(line, source=POD_EVENTS):
    """The findings the walk makes of one line of text."""
    found = text_findings(line, source)
    assert found, "no TEXT_RULE names %r" % line
    return found


def see(**fields):
    """A Seen of a plain node with nothing read about it, and `fields` over it."""
    base = dict(node=node(), name=NODE, pod=None, request=None, facts=None, texts=[],
                plugin_pods=[], other_components=[], plugin_why=None, daemonsets=None,
                rc_name=None, runtimeclass=None, rc_why=None, missing={}, resource="nvidia.com/gpu",
                driver_labels=list(DRIVER_LABELS), selectors=list(PLUGIN_SELECTORS),
                dp_namespace=None, where=Where(), last_errors={})
    base.update(fields)
    base.setdefault("labels", base["node"]["metadata"].get("labels") or {})
    if base["pod"] is not None and base["request"] is None and "request" not in fields:
        base["request"] = 1
    return Seen(**base)


def case(case_id, status, reason=None, nxt=(), evidence=(), absent=(), **fields):
    return pytest.param(fields, status, reason, (nxt,) if isinstance(nxt, str) else nxt,
                        evidence, absent, id=case_id)


def judge(rule, layer, fields, status, reason, nxt, evidence, absent):
    out = rule(see(**fields))
    assert set(out) <= {"layer", "status", "evidence", "next", "reason"}
    assert (out["layer"], out["status"], out.get("reason")) == (layer, status, reason), out
    for part in nxt:
        assert part in out["next"], (part, out["next"])
    for source, value in evidence:
        assert any(item["source"] == source and (
            value in str(item["value"]) if isinstance(value, Has) else item["value"] == value)
            for item in out["evidence"]), ((source, value), out["evidence"])
    text = repr(out["evidence"]) + out["next"]
    for part in absent:
        assert part not in text, (part, out)
    return out


# --------------------------------------------------------------------------------- driver
SMI = {"driver_ok": True, "nvidia_smi": "/usr/bin/nvidia-smi", "driver_version": "550.54.15",
       "gpus": [{"uuid": "GPU-1"}, {"uuid": "GPU-2"}]}
SMI_OK = (FACTS + " driver_ok (nvidia-smi on the node: /usr/bin/nvidia-smi)", True)
LABEL = ("node n1 .metadata.labels[nvidia.com/cuda.driver-version.full]", "550.54.15")
NO_SMI_OUT = "node_facts[n1] holds no nvidia-smi output"
DRIVER = [
    case("smi-ok", "ok", nxt="the host sees its GPUs; go on to the container runtime", facts=SMI,
         evidence=[SMI_OK, (FACTS + " driver_version", "550.54.15"), LABEL], absent=["note"]),
    case("smi-ok-no-path-no-version", "ok", facts={"driver_ok": True},
         evidence=[(FACTS + " driver_ok (nvidia-smi on the node)", True), LABEL],
         absent=["driver_version"]),
    case("smi-fails-generic", "broken",
         facts=dict(SMI, driver_ok=False, driver_error="couldn't communicate with the NVIDIA driver"),
         nxt=["check the kernel module (lsmod | grep nvidia; dkms status)"],
         evidence=[(FACTS + " driver_error (nvidia-smi's output)", "couldn't communicate with the NVIDIA driver")]),
    case("smi-fails-version-mismatch", "broken", nxt="reboot, or unload and reload the nvidia modules",
         facts={"driver_ok": False, "driver_error": "Failed to initialize NVML: Driver/library version mismatch"},
         texts=said("Failed to initialize NVML: Driver/library version mismatch", KUBELET),
         evidence=[(KUBELET, "Failed to initialize NVML: Driver/library version mismatch")]),
    case("smi-fails-no-devices", "broken", nxt="the driver lists no GPU",
         facts={"driver_ok": False, "driver_error": "No devices were found"}),
    case("smi-fails-gpu-lost", "broken", nxt="a GPU fell off the bus (Xid 79)",
         facts={"driver_ok": False, "kernel_xid": [LOST]}, evidence=[(FACTS + " kernel_xid (dmesg)", LOST)]),
    case("smi-ok-kernel-lost", "broken", nxt=["the kernel on n1 says a GPU is gone (" + LOST,
                                              "nvidia-smi still answers for the others"],
         facts=dict(SMI, kernel_xid=["x"] * 3 + [LOST] * 4), evidence=[(FACTS + " kernel_xid (dmesg)", LOST)]),
    case("smi-fewer-gpus-than-gfd", "broken", nxt="nvidia-smi on n1 lists 1 GPU(s), GPU feature discovery counted 2",
         facts=dict(SMI, gpus=[{"uuid": "GPU-1"}]),
         evidence=[(FACTS + " gpus (nvidia-smi --query-gpu)", 1),
                   ("node n1 .metadata.labels[nvidia.com/gpu.count]", "2")]),
    case("smi-fewer-gpus-under-mig", "ok", facts=dict(SMI, gpus=[{"uuid": "GPU-1"}]),
         node=node(labels={"nvidia.com/mig.strategy": "single"}), absent=["gpus (nvidia-smi"]),
    case("smi-no-gfd-count", "ok", facts=dict(SMI, gpus=[]), node=node(labels={"nvidia.com/gpu.count": "x"})),
    case("fabric-manager-inactive", "broken", facts=dict(SMI, fabric_manager="inactive"),
         texts=said("CUDA error: system not yet initialized (error 802)"),
         nxt=["Fabric Manager is inactive on n1", "of the driver's version (550.54.15)"],
         evidence=[(FACTS + " fabric_manager (systemctl nvidia-fabricmanager)", "inactive"),
                   (POD_EVENTS, "CUDA error: system not yet initialized (error 802)")]),
    case("fabric-manager-active-old-802", "ok", facts=dict(SMI, fabric_manager="active"),
         texts=said("CUDA error: system not yet initialized (error 802)"),
         evidence=[(FACTS + " fabric_manager (systemctl nvidia-fabricmanager)", "active"),
                   ("note", Has("older error texts name the driver, but nvidia-smi works on the node now"))]),
    case("cuda-802-without-fabric-facts", "broken", facts=SMI,
         texts=said("CUDA error: system not yet initialized (error 802)"),
         nxt="CUDA fails with error 802 while nvidia-smi works",
         evidence=[(POD_EVENTS, "CUDA error: system not yet initialized (error 802)")]),
    case("xid-notes-not-application-ones", "ok", facts=dict(SMI, kernel_xid=[XID48, XID13]),
         evidence=[("note", Has("Xid 48 on PCI:0000:3b:00: the device plugin marks that GPU unhealthy"))],
         absent=["Xid 13 on"]),
    case("no-facts-labels-missing", "unknown",
         reason="nvidia-smi was not run on n1 (the bundle has no node_facts[n1])",
         nxt="run nvidia-smi on n1", labels={"nvidia.com/gpu.count": "2"},
         evidence=[("node n1 .metadata.labels[gpu-incident-lab/driver-version]", "<missing>"),
                   ("node n1 .metadata.labels[nvidia.com/cuda.driver-version.full]", "<missing>"),
                   ("note", Has("a driver label is neither proof of a driver"))],
         absent=["cuda.driver-version.major"]),
    case("no-facts-live", "unknown", reason="nvidia-smi was not run on n1 (no node facts)", where=Where("live"),
         evidence=[LABEL]),
    case("facts-without-smi-collector-says", "unknown", facts={"kernel_xid": [XID13]},
         missing={"nvidia-smi-query.csv": "nvidia-smi not found"},
         reason=NO_SMI_OUT + "; the collector says nvidia-smi not found"),
    case("no-smi-kernel-lost", "broken", facts={"kernel_xid": [LOST]},
         nxt=["the kernel on n1 says a GPU is gone", "drain the node"],
         evidence=[(FACTS + " kernel_xid (dmesg)", LOST)]),
    case("no-smi-driver-text", "broken", texts=said("nvidia-container-cli: initialization error: nvml error: "
                                                    "driver not loaded"),
         nxt=["nvidia-container-cli could not load the host's driver library or the driver is not loaded - "
              "caused at the driver on n1: on n1: run nvidia-smi"]),
    case("no-smi-802-text", "broken", texts=said("CUDA error: system not yet initialized (error 802)"),
         nxt="Fabric Manager: systemctl status nvidia-fabricmanager on n1"),
]


@pytest.mark.parametrize("fields,status,reason,nxt,evidence,absent", DRIVER)
def test_driver(fields, status, reason, nxt, evidence, absent):
    judge(host_layers.driver, "driver", fields, status, reason, nxt, evidence, absent)


# ------------------------------------------------------------------------ container runtime
def facts(running=None, configured=None, default=None, cdi=None, **more):
    """Node facts of containerd: what crictl info (running) and config dump (configured) showed."""
    out = dict(more)
    for key, value in (("runtimes_running", running), ("runtimes_configured", configured),
                       ("default_runtime", default), ("cdi_enabled", cdi)):
        if value is not None:
            out[key] = value
    return out


RC = dict(pod=pod(phase="Pending", states=[state("waiting", ready=False, reason="ContainerCreating")]),
          rc_name="nvidia", runtimeclass={"metadata": {"name": "nvidia"}, "handler": "nvidia"})
NO_RC = dict(pod=RC["pod"])
LOADED = facts(["runc", "nvidia"], ["runc", "nvidia"], "runc", False)
RUNNING = (FACTS + " runtimes_running (crictl info: the running daemon)")
CONFIGURED = (FACTS + " runtimes_configured (containerd config dump: what the files make the next start load)")
HANDLER = ("RuntimeClass nvidia .handler", "nvidia")
NO_RUNTIME = 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: ' \
    'no runtime for "nvidia" is configured'
CDI_MISSING = 'Error: failed to create containerd task: unresolvable CDI devices nvidia.com/gpu=all'
NVML_UNKNOWN = "Failed to initialize NVML: Unknown Error"
NO_NVML = "could not load NVML library: libnvidia-ml.so.1: cannot open shared object file"
CRI_DOWN = 'failed to load plugin io.containerd.grpc.v1.cri error="invalid plugin config"'
UNREAD = "what the running containerd holds can only be read on the node"
RESTART = "the files give containerd the nvidia runtime but the running daemon does not have it: a restart is pending"
NOT_LOADED = 'containerd on n1 has not loaded the nvidia runtime: check the drop-in is imported and merged'
CONTAINER_RUNTIME = [
    # the Pod's RuntimeClass, as the walk read it
    case("rc-404", "broken", nxt="create RuntimeClass nvidia (handler: the runtime name", facts=LOADED,
         **dict(RC, runtimeclass=None), evidence=[("RuntimeClass nvidia", "404 Not Found")], absent=[RUNNING]),
    case("rc-unreadable", "unknown", reason="the RuntimeClass is not in this source", facts=LOADED,
         **dict(RC, runtimeclass=None, rc_why="the bundle has no cluster/runtimeclasses.json"),
         nxt="the RuntimeClass nvidia could not be read here; give its handler",
         evidence=[("RuntimeClass nvidia", "not readable here: the bundle has no cluster/runtimeclasses.json"),
                   (RUNNING, ["runc", "nvidia"])]),
    case("rc-unreadable-live-text", "broken", **dict(RC, runtimeclass=None, rc_why="not in the bundle"),
         texts=said(CDI_MISSING), nxt=["a CDI device the Pod was given has no CDI spec on the node",
                                       "nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml"],
         evidence=[(POD_EVENTS, CDI_MISSING)]),
    case("rc-without-handler-is-the-default", "ok", **dict(RC, runtimeclass={"metadata": {}}),
         facts=facts(["runc"], default="nvidia"), evidence=[("RuntimeClass nvidia .handler", None)],
         nxt="containerd's default runtime nvidia is NVIDIA's"),
    # the CRI service itself
    case("cri-down", "broken", **RC, nxt="containerd's CRI service does not answer on n1 (crictl info failed)",
         facts=facts(cri_error="unknown service runtime.v1.RuntimeService",
                     containerd_errors=["e1", "e2", "e3", "e4"]),
         evidence=[HANDLER, (FACTS + " cri_error (crictl info)", "unknown service runtime.v1.RuntimeService"),
                   (FACTS + " containerd_errors", "e2"), (FACTS + " containerd_errors", "e4")],
         absent=["'e1'"]),
    # a handler: the running daemon decides, the files only tell a pending restart
    case("handler-loaded", "ok", **RC, facts=LOADED,
         evidence=[HANDLER, (RUNNING, ["runc", "nvidia"]), (CONFIGURED, ["runc", "nvidia"]),
                   (FACTS + " default_runtime", "runc"), (FACTS + " cdi_enabled", False)],
         nxt="containerd runs with the nvidia runtime loaded; go on to the device plugin", absent=["pending"]),
    case("handler-loaded-legacy-key", "ok", **RC, facts={"runtimes_loaded": ["nvidia"]},
         evidence=[(RUNNING, ["nvidia"])], absent=[CONFIGURED, "default_runtime", "cdi_enabled"]),
    case("handler-loaded-restart-pending", "ok", **RC,
         facts=facts(["runc", "nvidia"], ["runc", "nvidia", "nvidia-cdi"], "runc", True),
         nxt="go on to the device plugin (restart pending: the next start adds nvidia-cdi)",
         evidence=[("finding", "restart pending on n1: the next start adds nvidia-cdi")]),
    case("handler-loaded-old-error-is-history", "ok", **RC, facts=LOADED, texts=said(NO_RUNTIME),
         evidence=[("note", Has("an older error says containerd lacked nvidia; the running daemon has it now"))],
         absent=[POD_EVENTS]),
    case("handler-loaded-live-error", "broken", **RC, facts=LOADED, texts=said(NVML_UNKNOWN),
         nxt=["NVML in the container fails with Unknown Error", "on n1 check containerd's NVIDIA runtime "
              "and the toolkit (Failed to initialize NVML"], evidence=[(POD_EVENTS, NVML_UNKNOWN)]),
    case("handler-restart-pending", "broken", **RC, facts=facts(["runc"], ["runc", "nvidia"], "runc"),
         texts=said(NO_RUNTIME), nxt=[RESTART, "On n1: systemctl restart containerd"],
         evidence=[("finding", "restart pending on n1: the next start adds nvidia"), (POD_EVENTS, NO_RUNTIME)]),
    case("handler-not-loaded", "broken", **RC, facts=facts(["runc"], ["runc"]), nxt=NOT_LOADED,
         absent=["finding"]),
    case("handler-not-loaded-files-unread", "broken", **RC, facts=facts(["runc"]), nxt=NOT_LOADED),
    case("handler-not-in-files", "broken", **RC, facts=facts(configured=["runc"]),
         nxt="not even containerd's files on n1 define the nvidia runtime (config dump)"),
    case("handler-files-only-live-error", "broken", **RC, facts=facts(configured=["runc", "nvidia"]),
         texts=said(NO_RUNTIME), nxt="containerd on n1 lacks runtime nvidia: configure it"),
    case("handler-files-only", "unknown", reason="only the files were read, not the running containerd", **RC,
         facts=facts(configured=["runc", "nvidia"]), nxt="the files define nvidia; ask the running daemon"),
    case("handler-nothing-read", "skipped", reason=UNREAD, **RC,
         nxt="on n1 run `crictl info` (and `containerd config dump`)", evidence=[HANDLER]),
    case("handler-nothing-read-collector-says", "skipped", reason=UNREAD + "; the collector says crictl not found",
         **RC, facts={"driver_ok": True}, missing={"crictl-info.json": "crictl not found"}),
    # no RuntimeClass: the default runtime and CDI decide
    case("default-live-error", "broken", **NO_RC, facts=facts(["runc"], default="runc", cdi=False),
         texts=said(NO_NVML), nxt="on n1 give the plugin's Pod NVIDIA's runtime",
         evidence=[("Pod .spec.runtimeClassName", "<none>: containerd's default runtime runs it")]),
    case("default-is-nvidia-by-name", "ok", **NO_RC, facts=facts(["runc", "nvidia"], default="nvidia"),
         nxt="containerd's default runtime nvidia is NVIDIA's: Pods without a RuntimeClass get the GPU"),
    case("default-is-nvidia-by-binary", "ok", **NO_RC,
         facts=facts(["runc"], default="runc", runtime_binaries={"runc": "/usr/bin/nvidia-container-runtime"}),
         nxt="containerd's default runtime runc is NVIDIA's"),
    case("default-cdi-on", "ok", **NO_RC, facts=facts(["runc"], default="runc", cdi=True), nxt="CDI is on"),
    case("default-runc-cdi-off", "broken", **NO_RC, facts=LOADED,
         nxt="default runtime runc runs it - not NVIDIA's - and CDI is off: the container gets no GPU. "
             "Give the Pod runtimeClassName: nvidia,"),
    case("default-runc-cdi-off-names-loaded", "broken", **NO_RC, facts=facts(["runc", "nvidia-cdi"], None, "runc", False),
         nxt="runtimeClassName: nvidia-cdi,"),
    case("default-runc-cdi-off-none-loaded", "broken", **NO_RC, facts=facts(["runc"], None, "runc", False),
         nxt="runtimeClassName: nvidia,"),
    case("default-cdi-unread", "unknown", reason="CDI unknown", **NO_RC, facts=facts(["runc"], default="runc"),
         nxt="without a RuntimeClass the default runtime and CDI decide; CDI could not be read (crictl info on n1)"),
    case("default-unread", "unknown", reason="the default runtime unknown", **NO_RC, facts=facts(["runc"], cdi=False),
         nxt="the default runtime could not be read"),
    case("default-and-cdi-unread", "unknown", reason="the default runtime and CDI unknown", **NO_RC,
         facts=facts(["runc"]), nxt="the default runtime and CDI could not be read"),
    case("default-nothing-read", "skipped", reason=UNREAD, **NO_RC,
         nxt="on n1 run `crictl info` (gpu_node_facts over SSH, or a support bundle's nodes/n1/crictl-info.json)"),
    case("default-nothing-read-collector-says", "skipped", reason=UNREAD + "; the collector says no crictl",
         **NO_RC, facts={"driver_ok": True}, missing={"crictl-info.json": "no crictl"}),
    # no Pod: the node itself
    case("node-nvidia-loaded", "ok", facts=LOADED, absent=["runtimeClassName"],
         nxt="containerd runs with nvidia loaded for Pods whose RuntimeClass names it; its default is runc "
             "and CDI is off"),
    case("node-nvidia-loaded-rest-unread", "ok", facts=facts(["nvidia-cdi", "nvidia"]),
         nxt="containerd runs with nvidia-cdi, nvidia loaded for Pods whose RuntimeClass names it; its default "
             "is unknown and CDI is unknown"),
    case("node-restart-would-load-nvidia", "broken", facts=facts(["runc"], ["runc", "nvidia"], "runc", False),
         nxt="containerd on n1 runs without an NVIDIA runtime and with CDI off; the files give it nvidia but "
             "the daemon never restarted (restart pending): systemctl restart containerd"),
    case("node-restart-would-drop-runc", "broken", facts=facts(["runc"], ["nvidia"], "runc", False),
         nxt="(restart pending) - and the next start drops runc, which its default_runtime_name needs",
         evidence=[("finding", "restart pending on n1: the next start adds nvidia; the next start drops runc; "
                    "with runc gone from the files, the CRI plugin of containerd 1.6/1.7 fails to load on "
                    "restart when default_runtime_name is runc")]),
    case("node-no-nvidia-cdi-off", "broken", facts=facts(["runc"], ["runc"], "runc", False),
         nxt="containerd on n1 has no NVIDIA runtime loaded and CDI off: no container there gets a GPU"),
    case("node-cdi-unread", "unknown", reason="CDI unknown", facts=facts(["runc"], ["runc"], "runc")),
    case("node-files-only", "unknown", reason="the default runtime unknown",
         facts=facts(configured=["runc"], default="runc", cdi=False),
         nxt="the default runtime and CDI decide; neither could not be read"),
    case("node-nothing-read", "skipped", reason=UNREAD, nxt="nodes/n1/crictl-info.json", absent=["runtimeClassName"]),
    # error texts the running daemon contradicts are history
    case("cri-error-text-history", "ok", facts=facts(["runc"], default="nvidia"), texts=said(CRI_DOWN, KUBELET),
         evidence=[("note", "an older containerd error: " + CRI_DOWN)], absent=[KUBELET]),
    case("cri-error-text-live", "broken", facts=facts(configured=["runc"], default="nvidia"),
         texts=said(CRI_DOWN, KUBELET), nxt="containerd's CRI plugin is not serving: on n1 check containerd's "
         "NVIDIA runtime and the toolkit", evidence=[(KUBELET, CRI_DOWN)]),
    case("other-layers-texts-ignored", "skipped", reason=UNREAD, texts=said(LOST) + said("Allocate failed")),
]


@pytest.mark.parametrize("fields,status,reason,nxt,evidence,absent", CONTAINER_RUNTIME)
def test_container_runtime(fields, status, reason, nxt, evidence, absent):
    judge(host_layers.container_runtime, "container-runtime", fields, status, reason, nxt, evidence, absent)


@pytest.mark.parametrize("facts_seen,pending", [
    ({}, None),
    (facts(["runc", "nvidia"], ["nvidia", "runc"]), None),
    (facts(["runc"], ["runc", "nvidia"]), "the next start adds nvidia"),
    (facts(["runc", "nvidia"], ["runc"]), "the next start drops nvidia"),
    (facts(["runc", "a"], ["nvidia"]), "the next start adds nvidia; the next start drops a, runc; with runc gone "
     "from the files, the CRI plugin of containerd 1.6/1.7 fails to load on restart when default_runtime_name is runc"),
    (facts(["runc"], default="runc", default_runtime_configured="nvidia"),
     "the default runtime changes from runc to nvidia"),
    ({"runtimes_loaded": ["runc"], "default_runtime": "runc", "default_runtime_configured": "nvidia"}, None),
    (facts(["runc"], default="runc", default_runtime_configured="runc"), None),
    ({"restart_pending": True}, "the files differ from the running daemon"),
    (facts(["runc"], ["runc", "x"], restart_pending=True), "the next start adds x"),
    (facts(["runc"], [], restart_pending=True), "the next start drops runc; with runc gone from the files, "
     "the CRI plugin of containerd 1.6/1.7 fails to load on restart when default_runtime_name is runc"),
    (facts(["runc"], None, restart_pending=True), "the files differ from the running daemon"),
], ids=lambda v: None if isinstance(v, dict) else str(v)[:30])
def test_restart_pending(facts_seen, pending):
    assert host_layers.restart_pending(facts_seen) == pending


# --------------------------------------------------------------------------- device plugin
CRASH_FS = ("E1203 10:31:41.336977      90 main.go:185] failed to create FS watcher for "
            "/var/lib/kubelet/device-plugins/: no such file or directory")
GFD = plugin_pod("gfd-1", container="gpu-feature-discovery-ctr")
ALLOCATE = "UnexpectedAdmissionError: Allocate failed due to rpc error: no healthy devices present"
DP_OK = "the plugin runs and mounts the kubelet's socket folder; go on to what the node advertises"
NO_POD = "the device-plugin DaemonSet has no Pod on n1: check its nodeSelector/affinity/tolerations"
PLUGIN_LOG = "log of gpu-operator/dp-1 (device-plugin Pod)"
# NVIDIA's device plugin v0.19.3, MIG_STRATEGY=single over all-balanced on lab-node-1 (real output)
MIG_SINGLE = ("E1205 10:15:29.800611      77 main.go:185] error starting plugins: error getting plugins: "
              "unable to create plugins: failed to construct resource managers: error building device map: "
              "error building device map from config.resources: invalid MIG configuration: error visiting "
              "devices: error visiting device: error visiting device: error visiting MIG device: error "
              "visiting MIG device: more than one MIG device type present on node")
DEVICE_PLUGIN = [
    case("pods-unreadable", "skipped", reason="the bundle has no cluster/pods.json",
         plugin_why="the bundle has no cluster/pods.json", nxt="kubectl get pods -A -o json",
         evidence=[(PODS, "not readable: the bundle has no cluster/pods.json")]),
    case("no-plugin-pod", "broken", nxt=[NO_POD, "`kubectl get ds -A -l name=nvidia-device-plugin-ds`"],
         other_components=[(GFD, "GPU feature discovery")],
         evidence=[(PODS, "no device-plugin Pod on n1"),
                   ("note", "gpu-operator/gfd-1 matches " + " | ".join(PLUGIN_SELECTORS)
                    + " but is GPU feature discovery, not the device plugin")], absent=["DaemonSets", "stale"]),
    case("no-plugin-pod-stale-socket", "broken", nxt=NO_POD, facts={"device_plugin_sockets": ["nvidia-gpu.sock"]},
         evidence=[("note", Has("says the plugin socket exists on n1 (nvidia-gpu.sock), but no plugin Pod runs"))]),
    case("no-plugin-pod-legacy-socket-key", "broken", facts={"device_plugin_socket": True},
         evidence=[("note", Has("says the plugin socket exists on n1 (<a socket>)"))], nxt=NO_POD),
    case("no-plugin-pod-daemonsets", "broken", nxt=NO_POD,
         node=node(taints=[{"key": "gpu", "effect": "NoSchedule"}, {"key": "soft", "effect": "PreferNoSchedule"}]),
         daemonsets=[daemonset(), daemonset("other", labels={"app": "else"}),
                     daemonset("gfd", container="gpu-feature-discovery"),
                     daemonset("tolerant", node_selector={"gpu": "no"}, tolerations=[{"operator": "Exists"}])],
         evidence=[("DaemonSets [gpu-operator/dp]", "desired 1, ready 0; its nodeSelector/affinity admit n1; "
                    "untolerated taint(s) gpu"),
                   ("DaemonSets [gpu-operator/tolerant]", "desired 1, ready 0; its nodeSelector/affinity exclude n1")],
         absent=["gpu-operator/other", "gpu-operator/gfd"]),
    case("plugin-ok", "ok", nxt=DP_OK, plugin_pods=[plugin_pod()], facts={"device_plugin_sockets": ["nvidia-gpu.sock"]},
         evidence=[("Pod gpu-operator/dp-1", "phase=Running Ready=True mounts /var/lib/kubelet/device-plugins: yes"),
                   (FACTS + " device_plugin_sockets (nvidia-<resource>.sock in /var/lib/kubelet/device-plugins)",
                    ["nvidia-gpu.sock"])], absent=["note"]),
    case("plugin-ok-no-socket-yet", "ok", nxt=DP_OK, plugin_pods=[plugin_pod()], facts={"device_plugin_socket": False},
         evidence=[(FACTS + " device_plugin_sockets (nvidia-<resource>.sock in /var/lib/kubelet/device-plugins)", "none"),
                   ("note", Has("no nvidia-<resource>.sock on n1 while a plugin Pod runs there"))]),
    case("plugin-not-ready", "broken", plugin_pods=[plugin_pod(phase="Pending", ready="False"),
                                                    plugin_pod("dp-2", mounted=False)],
         facts={"device_plugin_sockets": []}, absent=["no nvidia-<resource>.sock on n1"],
         nxt="the device-plugin Pod gpu-operator/dp-1 is Pending (Ready=False): kubectl -n gpu-operator describe "
             "pod dp-1", evidence=[("Pod gpu-operator/dp-2", "phase=Running Ready=True mounts "
                                    "/var/lib/kubelet/device-plugins: no")]),
    # NVIDIA's plugin v0.19.3 without the socket mount (drill plugin-no-mount on lab-node-1): it
    # crash-loops, and its last words go with the verdict
    case("plugin-crashing-said-last", "broken", plugin_pods=[plugin_pod(ready="False", mounted=False)],
         last_errors={("gpu-operator", "dp-1"): [{"source": "log of gpu-operator/dp-1 [container nvidia-device-plugin]",
                                                  "value": CRASH_FS}]},
         nxt="is Running (Ready=False); it said last: " + CRASH_FS[:200],
         evidence=[("log of gpu-operator/dp-1 [container nvidia-device-plugin]", CRASH_FS)]),
    # NVIDIA's plugin v0.19.3 with MIG_STRATEGY=single over all-balanced (drill
    # mig-strategy-mismatch on lab-node-1, `kubectl logs` of its crash-looping container,
    # 2026-12-05): it refuses the layout in its own words - they name the verdict
    case("plugin-refuses-mig-layout", "broken", plugin_pods=[plugin_pod(ready="False")],
         node=node(labels={"nvidia.com/mig.config": "all-balanced", "nvidia.com/mig.strategy": "single"}),
         texts=said(MIG_SINGLE, PLUGIN_LOG),
         last_errors={("gpu-operator", "dp-1"): [{"source": PLUGIN_LOG, "value": MIG_SINGLE[-300:]}]},
         nxt=["the device plugin on n1 refuses the node's MIG layout (nvidia.com/mig.config=all-balanced, "
              "nvidia.com/mig.strategy=single)", '"invalid MIG configuration: error visiting devices:',
              "more than one MIG device type present on node\"", "MIG_STRATEGY=mixed"],
         evidence=[(PLUGIN_LOG, Has("invalid MIG configuration")),
                   (PLUGIN_LOG, Has("more than one MIG device type present on node"))],
         absent=["it said last"]),
    # a Pod being deleted (a DaemonSet rollout: maxUnavailable 1 deletes the old Pod before its
    # successor is made) keeps phase Running while its containers stop - named as such, its stop
    # is no crash; a successor that serves makes it a note, one that crashes goes first
    case("plugin-being-deleted", "broken", plugin_pods=[deleting(plugin_pod(ready="False"))],
         last_errors={("gpu-operator", "dp-1"): [{"source": "log of gpu-operator/dp-1", "value": "I1205 signal"}]},
         nxt=["the device-plugin Pod gpu-operator/dp-1 is being deleted (since 2026-12-05T10:00:00Z",
              "kubectl -n gpu-operator get pods -l app=nvidia-device-plugin-daemonset -w"],
         evidence=[("Pod gpu-operator/dp-1", "phase=Running Ready=False mounts /var/lib/kubelet/device-plugins: "
                                             "yes; being deleted (deletionTimestamp 2026-12-05T10:00:00Z)")],
         absent=["it said last"]),
    case("plugin-being-deleted-successor-serves", "ok", nxt=DP_OK,
         plugin_pods=[deleting(plugin_pod(ready="False")), plugin_pod("dp-2")],
         evidence=[("Pod gpu-operator/dp-1", Has("being deleted"))]),
    case("plugin-being-deleted-successor-crashes", "broken",
         plugin_pods=[deleting(plugin_pod(ready="False")), plugin_pod("dp-2", ready="False")],
         nxt="the device-plugin Pod gpu-operator/dp-2 is Running (Ready=False)", absent=["is being deleted"]),
    case("plugin-ready-unset", "broken", plugin_pods=[dict(plugin_pod(), status={"phase": "Running"})],
         nxt="is Running (Ready=None)", evidence=[("Pod gpu-operator/dp-1", Has("Ready=<unset>"))]),
    case("plugin-without-socket-mount", "broken", plugin_pods=[plugin_pod(mounted=False), plugin_pod("dp-2", "Failed")],
         nxt="the device-plugin Pod gpu-operator/dp-1 does not mount the hostPath /var/lib/kubelet/device-plugins"),
    case("plugin-own-error", "broken", plugin_pods=[plugin_pod()], texts=said(ALLOCATE, POD_EVENTS),
         nxt="the kubelet's Allocate call to the device plugin failed (UnexpectedAdmissionError): read the "
             "plugin's log on n1 (kubectl logs) - " + ALLOCATE, evidence=[(POD_EVENTS, ALLOCATE)]),
    case("plugin-broken-and-own-error", "broken", plugin_pods=[plugin_pod(mounted=False)],
         texts=said(ALLOCATE, POD_EVENTS), nxt="does not mount the hostPath", evidence=[(POD_EVENTS, ALLOCATE)]),
    case("plugin-lower-texts-are-notes", "ok", nxt=DP_OK, plugin_pods=[plugin_pod()],
         texts=said(NO_NVML, PLUGIN_EVENTS) + said(NO_NVML) + said("XidCriticalError on GPU-1", PLUGIN_EVENTS),
         evidence=[(PLUGIN_EVENTS, NO_NVML + " -> caused at the container-runtime layer")],
         absent=[POD_EVENTS, "node-advertisement"]),
]


@pytest.mark.parametrize("fields,status,reason,nxt,evidence,absent", DEVICE_PLUGIN)
def test_device_plugin(fields, status, reason, nxt, evidence, absent):
    judge(plugin_layers.device_plugin, "device-plugin", fields, status, reason, nxt, evidence, absent)


# ----------------------------------------------------------------------- node advertisement
CAP = ("node n1 .status.capacity[nvidia.com/gpu]", "2")
UNHEALTHY = "the plugin marked a GPU unhealthy after an Xid"
MIG_FAILED = {"nvidia.com/mig.config": "all-disabled", "nvidia.com/mig.config.state": "failed",
              "nvidia.com/mig.strategy": "mixed"}
ADVERTISEMENT = [
    case("advertised", "ok", nxt="n1 advertises 2 nvidia.com/gpu; go on to the scheduler",
         facts=dict(SMI), evidence=[CAP, ("node n1 .status.allocatable[nvidia.com/gpu]", "2"),
                                    (FACTS + " gpus (nvidia-smi)", 2)], absent=["note", "finding"]),
    case("must-gather-without-status", "unknown", reason="no node status here", where=Where("must-gather"),
         node=node(status=False), nxt="the must-gather's gpu_nodes.descr lacks this node's status",
         evidence=[("node n1 .status.capacity[nvidia.com/gpu]", "<missing>")]),
    case("bundle-without-status", "broken", node=node(status=False),
         nxt="the node does not advertise nvidia.com/gpu (capacity missing, allocatable missing)"),
    case("must-gather-other-resource", "broken", where=Where("must-gather"), node=node(cap=None, alloc="1"),
         nxt="(capacity missing, allocatable 1)"),
    case("advertises-zero", "broken", node=node(cap="0"), nxt="(capacity 0, allocatable 0): read the kubelet log on n1"),
    case("capacity-below-smi", "ok", node=node(cap="1"), facts=dict(SMI),
         evidence=[("note", "capacity 1 is below nvidia-smi's 2 GPU(s) x 1 replica(s): the plugin advertises fewer "
                    "than the host sees")]),
    case("time-slicing-replicas", "ok", node=node(cap="8", labels={"nvidia.com/gpu.replicas": "4"}), facts=dict(SMI),
         absent=["note"], evidence=[(FACTS + " gpus (nvidia-smi)", 2)]),
    case("time-slicing-below", "ok", node=node(cap="4", labels={"nvidia.com/gpu.replicas": "4"}), facts=dict(SMI),
         evidence=[("note", Has("capacity 4 is below nvidia-smi's 2 GPU(s) x 4 replica(s)"))]),
    case("mig-mixed-not-compared", "ok", node=node(cap="1", labels={"nvidia.com/mig.strategy": "mixed"}),
         facts=dict(SMI), absent=["gpus (nvidia-smi)"]),
    case("other-resource-not-compared", "ok", resource="nvidia.com/mig-1g.5gb",
         node={"metadata": {"name": NODE}, "status": {"capacity": {"nvidia.com/mig-1g.5gb": "7"},
                                                      "allocatable": {"nvidia.com/mig-1g.5gb": "7"}}},
         facts=dict(SMI), absent=["gpus (nvidia-smi)"], nxt="n1 advertises 7 nvidia.com/mig-1g.5gb"),
    case("unhealthy-no-pod", "ok", node=node(cap="2", alloc="1"),
         evidence=[("finding", "1 of 2 nvidia.com/gpu not allocatable: the plugin marked them unhealthy (an Xid) "
                    "or they are reserved")]),
    case("unhealthy-pod-needs-it", "broken", node=node(cap="2", alloc="1"), **NO_RC, request=2,
         facts={"kernel_xid": [XID48, XID13]}, texts=said("marking device GPU-1 as unhealthy", KUBELET),
         nxt="the Pod needs 2 nvidia.com/gpu; n1 has 2 but only 1 are healthy",
         evidence=[(FACTS + " kernel_xid", XID48), (KUBELET, "marking device GPU-1 as unhealthy")], absent=[XID13]),
    case("unhealthy-pod-fits", "ok", node=node(cap="4", alloc="3"), **NO_RC, request=2, absent=["note"]),
    # a layout change under a Pod holding a MIG device (drill mig-layout-busy on lab-node-1: the
    # node after `mig.yml -e mig_config=all-disabled` failed, 2026-12-05): the labels say why
    case("mig-change-failed", "broken", **NO_RC,
         node=dict(node(cap="20", alloc="0", labels=MIG_FAILED),
                   status={"capacity": {"nvidia.com/gpu": "20", "nvidia.com/mig-1g.5gb": "4"},
                           "allocatable": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.5gb": "4",
                                           "nvidia.com/mig-2g.10gb": "0"}}),
         nxt=["nvidia-mig-parted could not apply the MIG layout nvidia.com/mig.config=all-disabled asks for "
              "(nvidia.com/mig.config.state=failed)", "advertises nvidia.com/mig-1g.5gb: 4 instead of "
              "nvidia.com/gpu (the Pod's request)", "mig.yml -e mig_config=all-disabled"],
         evidence=[("node n1 .metadata.labels", "nvidia.com/mig.config=all-disabled nvidia.com/mig.config.state=failed"),
                   ("node n1 .status.allocatable (MIG devices)", "nvidia.com/mig-1g.5gb: 4")],
         absent=["journalctl"]),
    case("mig-change-failed-pod-fits", "ok", node=node(cap="4", labels=MIG_FAILED), **NO_RC, request=1,
         evidence=[("node n1 .metadata.labels", Has("state=failed"))]),
    case("mig-change-pending", "broken", node=node(cap="2", alloc="0", labels=dict(
        MIG_FAILED, **{"nvidia.com/mig.config.state": "pending"})),
         nxt="the node does not advertise nvidia.com/gpu", evidence=[("note", Has("state pending"))]),
    case("mig-change-done", "ok", node=node(labels=dict(MIG_FAILED, **{"nvidia.com/mig.config.state": "success"})),
         absent=["mig.config"]),
    case("pod-asks-more-than-node", "ok", node=node(cap="2", alloc="1"), **NO_RC, request=4,
         evidence=[("note", "the Pod asks for 4, more than the 1 allocatable - a scheduling finding, the "
                    "advertisement itself is right")]),
]


@pytest.mark.parametrize("fields,status,reason,nxt,evidence,absent", ADVERTISEMENT)
def test_advertisement(fields, status, reason, nxt, evidence, absent):
    judge(plugin_layers.advertisement, "node-advertisement", fields, status, reason, nxt, evidence, absent)


# ------------------------------------------------------------------------------ scheduling
SCHEDULED = {"type": "PodScheduled", "status": "True"}
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}
COND = "Pod ml/p .status.conditions[PodScheduled]"
SCHEDULING = [
    case("node-takes-pods", "ok", nxt="the node takes Pods; give a Pod to check its own scheduling",
         evidence=[("node n1 .spec.unschedulable", False), ("node n1 .spec.taints", "none"),
                   ("node n1 Ready condition", "True")]),
    case("node-tainted", "ok", nxt="only Pods that tolerate gpu land here",
         node=node(taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"},
                           {"key": "soft", "effect": "PreferNoSchedule"}]),
         evidence=[("node n1 .spec.taints", ["gpu=x:NoSchedule", "soft=:PreferNoSchedule"])]),
    case("node-conditions-not-here", "unknown", reason="no Ready condition here", node=node(ready=None),
         nxt="the node's conditions are not in this source", evidence=[("node n1 Ready condition", "<unset>")]),
    case("node-live-without-ready", "broken", node=node(ready=None), where=Where("live"),
         nxt="the node is not Ready: nothing new is scheduled there"),
    case("node-not-ready", "broken", node=node(ready="False"), nxt="the node is not Ready"),
    case("node-cordoned", "broken", node=node(cordoned=True), nxt="the node is cordoned",
         evidence=[("node n1 .spec.unschedulable", True)]),
    case("pod-bound", "ok", pod=pod(scheduled=SCHEDULED), nxt="scheduled to n1; go on to the workload",
         evidence=[(COND, "True"), ("Pod .spec.nodeName", "n1")]),
    case("pod-bound-no-condition", "ok", pod=pod(), node=node(cordoned=True), evidence=[(COND, "True")]),
    case("pod-not-judged-yet", "unknown", reason="no PodScheduled condition yet", pod=pod(bound=False),
         nxt="wait for PodScheduled", evidence=[(COND, "<not set yet>")]),
    case("pod-insufficient", "broken", pod=pod(bound=False, scheduled=UNSCHEDULABLE, gpus=4),
         # the scheduler's sentence ends in a dot, which kube_objects.scheduler_findings keeps
         nxt="3 node(s): Insufficient nvidia.com/gpu.; the Pod requests 4 nvidia.com/gpu; n1 advertises 2",
         evidence=[(COND, "status=False reason=Unschedulable"), ("PodScheduled.message", UNSCHEDULABLE["message"]),
                   ("finding", "the Pod requests 4 nvidia.com/gpu; n1 advertises 2")]),
    case("pod-fits-no-advertisement", "broken", pod=pod(bound=False, scheduled=UNSCHEDULABLE), node=node(cap=None),
         nxt="3 node(s): Insufficient nvidia.com/gpu", absent=["advertises"]),
    case("pod-taints-and-cordon", "broken", node=node(cordoned=True, taints=[
        {"key": "gpu", "effect": "NoSchedule"}, {"key": "ok", "value": "1", "effect": "NoExecute"},
        {"key": "soft", "effect": "PreferNoSchedule"}]),
        pod=pod(bound=False, scheduled=dict(UNSCHEDULABLE, message="0/1 nodes are available"),
                tolerations=[{"key": "ok", "value": "1"}]),
        nxt="n1 has taint(s) the Pod does not tolerate: gpu=:NoSchedule; n1 is cordoned (spec.unschedulable)"),
    case("pod-message-names-nothing-known", "broken", pod=pod(bound=False, scheduled={
        "type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": ""}),
        nxt="read the scheduler's message above: kubectl describe pod p -n ml", absent=["finding"]),
]


@pytest.mark.parametrize("fields,status,reason,nxt,evidence,absent", SCHEDULING)
def test_scheduling(fields, status, reason, nxt, evidence, absent):
    judge(pod_layers.scheduling, "scheduling", fields, status, reason, nxt, evidence, absent)


# -------------------------------------------------------------------------------- workload
PHASE = "Pod ml/p .status.phase"
WORKLOAD = [
    case("no-pod", "skipped", reason="no Pod given", nxt="give a Pod to judge a workload"),
    case("not-scheduled", "skipped", reason="not scheduled, so no container ran",
         pod=pod(bound=False, phase="Pending", reason="Evicted"),
         evidence=[(PHASE, "Pending"), ("Pod ml/p .status.reason", "Evicted: the node was low on resource")]),
    case("running", "ok", pod=pod(states=[state()]), nxt="the workload runs",
         evidence=[(PHASE, "Running"), ("containerStatuses[cuda]", "running ready=True restarts=0")]),
    case("succeeded", "ok", pod=pod(phase="Succeeded", states=[state("terminated", ready=False, exitCode=0,
                                                                     reason="Completed")]),
         evidence=[("containerStatuses[cuda]", "terminated (Completed) ready=False restarts=0")]),
    case("waiting-caused-lower", "broken", pod=pod(phase="Pending", states=[state("waiting", False,
                                                                                  reason="ContainerCreating")]),
         texts=said(NO_RUNTIME) + said(NO_NVML, PLUGIN_EVENTS),
         nxt="the container itself fails (cuda: waiting (ContainerCreating)) - caused at the container-runtime "
             "layer (see there): kubectl logs p -n ml --previous",
         evidence=[(POD_EVENTS, NO_RUNTIME + " -> caused at the container-runtime layer")], absent=[PLUGIN_EVENTS]),
    case("exit-code", "broken", pod=pod(states=[state("terminated", False, exitCode=1)]),
         nxt="the container itself fails (cuda: terminated):", absent=["caused at"]),
    case("restarting-not-ready", "broken", pod=pod(states=[state(ready=False, restarts=3)]),
         nxt="(cuda: running)", absent=["it said last"]),
    case("crash-loop-said-last", "broken", pod=pod(states=[state("waiting", False, reason="CrashLoopBackOff", restarts=4)]),
         last_errors={("ml", "p"): [{"source": "log of ml/p [container cuda]",
                                     "value": "RuntimeError: CUDA error: out of memory"}]},
         nxt="(cuda: waiting (CrashLoopBackOff)); it said last: RuntimeError: CUDA error: out of memory: kubectl logs p",
         evidence=[("log of ml/p [container cuda]", "RuntimeError: CUDA error: out of memory")]),
    case("restarted-ready", "ok", pod=pod(states=[state(restarts=3)])),
    case("failed-phase", "broken", pod=pod(phase="Failed"), nxt="the container itself fails (Failed)"),
    case("no-state-yet", "unknown", reason="phase Pending", pod=pod(phase="Pending", states=[state(None, False)]),
         nxt="the Pod is Pending: watch it", evidence=[("containerStatuses[cuda]", "unknown ready=False restarts=0")]),
]


@pytest.mark.parametrize("fields,status,reason,nxt,evidence,absent", WORKLOAD)
def test_workload(fields, status, reason, nxt, evidence, absent):
    judge(pod_layers.workload, "workload", fields, status, reason, nxt, evidence, absent)


# ------------------------------------------------------------------ a crashing container's words
@pytest.mark.parametrize("log,expected", [
    # NVIDIA's device plugin v0.19.3 without /var/lib/kubelet/device-plugins (lab-node-1, drill
    # plugin-no-mount): klog's E line is its last error, the I lines before it are not
    ("I1203 10:31:00.607070 48 main.go:247] \"Starting NVIDIA Device Plugin\" version=\"v0.19.3\"\n"
     "I1203 10:31:00.607291 48 main.go:250] Starting FS watcher for /var/lib/kubelet/device-plugins\n"
     "E1203 10:31:00.607547 48 main.go:185] failed to create FS watcher for /var/lib/kubelet/device-plugins/: "
     "no such file or directory\n",
     "E1203 10:31:00.607547 48 main.go:185] failed to create FS watcher for /var/lib/kubelet/device-plugins/: "
     "no such file or directory"),
    # a Python workload: the last line that names an error, not the blank line after it
    ("loading model\nTraceback (most recent call last):\nRuntimeError: CUDA error: out of memory\n\n",
     "RuntimeError: CUDA error: out of memory"),
    ("step 1\nstep 2\n", "step 2"),            # no error words: its last line
    ("", None), (None, None), ("\n  \n", None),
])
def test_last_error(log, expected):
    from ansible.module_utils.diagnosis.texts import last_error
    assert last_error(log) == expected


def test_failing_containers_in_the_pods_own_order():
    from ansible.module_utils.diagnosis.texts import failing
    crash = {"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "restartCount": 3}
    the_pod = {"spec": {"containers": [{"name": "nvidia-device-plugin"}, {"name": "config-manager"}, {"name": "ok"}]},
               "status": {"containerStatuses": [
                   dict(crash, name="config-manager"), dict(crash, name="nvidia-device-plugin"),
                   {"name": "ok", "state": {"running": {}}, "restartCount": 0},
                   {"name": "done", "state": {"terminated": {"exitCode": 0}}, "restartCount": 0},
                   {"name": "was-bad", "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 2}},
                    "restartCount": 1},
                   {"name": "first-wait", "state": {"waiting": {"reason": "ContainerCreating"}}, "restartCount": 0}]}}
    assert failing(the_pod) == ["nvidia-device-plugin", "config-manager", "was-bad"]
    assert failing({"status": {}}) == []


def test_last_errors_of_a_log_of_several_containers():
    from ansible.module_utils.diagnosis.texts import last_errors
    log = ("I0 start\nE1 failed to create FS watcher\nI2 again\nE1 failed to create FS watcher\n"
           "E3 error finding pid: no process found\nI4 done\n")
    assert last_errors(log, 3) == ["E1 failed to create FS watcher", "E3 error finding pid: no process found"]
    assert last_errors(log, 1) == ["E3 error finding pid: no process found"]
    assert last_errors("only\ninfo\n", 3) == ["info"] and last_errors("", 3) == []


def test_a_restarted_containers_words_come_from_its_ended_instance():
    """Live, a crash-looping container's error is in its previous instance's log (the new one
    may not have printed it yet): the walk reads it (kubectl logs --previous), quotes its last
    error line and lets the text rules see it - the plugin's 'nvml init failed' names the driver."""
    from ansible.module_utils.diagnosis.sources import Source, Unreadable
    from ansible.module_utils.diagnosis.walk import Diagnosis

    class Live(Source):
        kind = "live"
        per_container_logs = True
        asked = []

        def events(self, namespace, name):
            return []

        def pod_log(self, namespace, name, containers=None, previous=False):
            self.asked.append((tuple(containers or ()), previous))
            if containers == ["nvidia-device-plugin"] and previous:
                return ('I1203 main.go:247] "Starting NVIDIA Device Plugin" version="v0.19.3"\n'
                        "E1203 main.go:185] error starting plugins: error getting plugins: unable to create "
                        "plugins: failed to construct resource managers: nvml init failed: Driver/library "
                        "version mismatch\n")
            if previous:
                raise Unreadable("no previous instance")
            return 'I1203 main.go:247] "Starting NVIDIA Device Plugin" version="v0.19.3"\n'

        def ref_log(self, namespace, name):
            return "log of %s/%s" % (namespace, name)

    source = Live()
    walk = Diagnosis(source)
    plugin = plugin_pod(ready="False")
    plugin["spec"]["containers"] = [{"name": "nvidia-device-plugin"}, {"name": "config-manager"}]
    plugin["status"]["containerStatuses"] = [
        {"name": "config-manager", "state": {"running": {}}, "restartCount": 0},
        {"name": "nvidia-device-plugin", "state": {"running": {}}, "restartCount": 3,
         "lastState": {"terminated": {"exitCode": 1}}}]
    found = walk._pod_texts(plugin, "device-plugin Pod")   # pylint: disable=protected-access
    assert (("nvidia-device-plugin",), True) in source.asked and (("config-manager",), True) not in source.asked
    said = walk.last_errors[("gpu-operator", "dp-1")]
    assert [e["source"] for e in said] == ["log of gpu-operator/dp-1 [container nvidia-device-plugin]"]
    assert said[0]["value"].endswith("nvml init failed: Driver/library version mismatch")
    assert any(t["layer"] == "driver" and "nvml init failed" in t["line"] for t in found), found


def test_a_single_container_s_current_log_is_read_once():
    """The Pod's log of one container is that container's current log: the walk asks for it once,
    then for the ended instance's (kubectl logs --previous) - not twice for the same text."""
    from ansible.module_utils.diagnosis.sources import Source
    from ansible.module_utils.diagnosis.walk import Diagnosis

    class Live(Source):
        kind = "live"
        per_container_logs = True

        def __init__(self):
            self.asked = []

        def events(self, namespace, name):
            return []

        def pod_log(self, namespace, name, containers=None, previous=False):
            self.asked.append((tuple(containers or ()), previous))
            if previous:
                return "E1203 main.go:185] nvml init failed: Driver/library version mismatch\n"
            return "I1203 starting\nE1203 still failing: ERROR_LIBRARY_NOT_FOUND\n"

        def ref_log(self, namespace, name):
            return "log of %s/%s" % (namespace, name)

    source = Live()
    plugin = plugin_pod(ready="False")
    plugin["spec"]["containers"] = [{"name": "nvidia-device-plugin"}]
    plugin["status"]["containerStatuses"] = [
        {"name": "nvidia-device-plugin", "state": {"running": {}}, "restartCount": 2,
         "lastState": {"terminated": {"exitCode": 1}}}]
    walk = Diagnosis(source)
    walk._pod_texts(plugin, "device-plugin Pod")   # pylint: disable=protected-access
    assert sorted(source.asked) == [(("nvidia-device-plugin",), False), (("nvidia-device-plugin",), True)]
    said = walk.last_errors[("gpu-operator", "dp-1")]
    assert said[0]["value"] == "E1203 still failing: ERROR_LIBRARY_NOT_FOUND"   # the newest words, current
