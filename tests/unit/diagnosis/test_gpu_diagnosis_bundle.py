"""gpu_diagnose judging support bundles and must-gather folders built around real artefacts.

Every node-side text comes from tests/diagnosis_corpus: what containerd 1.6.20 and 2.2.0 printed
here when asked with crictl (containerd-*/README.md), and excerpts of public bug reports
(real/SOURCE.md). The cluster objects are shaped as `kubectl get -o json` prints them.
"""
import copy
import gzip
import json
import pathlib
import shutil
from lab_testing import ROOT, TESTS  # tests/lab_testing.py

import pytest

import gpu_diagnose
from ansible.module_utils.node import artefacts as ga
from ansible.module_utils.diagnosis import diagnose as gdiag
from ansible.module_utils.diagnosis import layers as gl
from ansible.module_utils.diagnosis import bundle_source
from ansible.module_utils.diagnosis import must_gather as mg

CORPUS = TESTS / "diagnosis_corpus"
REAL = CORPUS / "real"
C16 = CORPUS / "containerd-1.6.20"
C22 = CORPUS / "containerd-2.2.0"
NODE = "gpu-a100-7"
QUERY_OK = ("0, NVIDIA A100-SXM4-40GB, GPU-6cd1a7c4-5f1e-7c2b-91a4-0d1e2f3a4b5c, 550.54.15, 40960 MiB\n"
            "1, NVIDIA A100-SXM4-40GB, GPU-7de2b8d5-6a2f-8d3c-a2b5-1e2f3a4b5c6d, 550.54.15, 40960 MiB\n")


def read(path):
    return pathlib.Path(path).read_text()


def node_obj(gpus="2", alloc=None, labels=None, taints=None):
    base = {"kubernetes.io/hostname": NODE, "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": "2", "nvidia.com/cuda.driver-version.full": "550.54.15"}
    base.update(labels or {})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": base},
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": {"cpu": "64", "nvidia.com/gpu": gpus},
                       "allocatable": {"cpu": "64", "nvidia.com/gpu": alloc if alloc is not None else gpus},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def plugin_pod(name, labels, containers=None, phase="Running", ready="True", waiting=None,
               namespace="gpu-operator"):
    containers = containers or [{"name": "nvidia-device-plugin", "image":
                                 "nvcr.io/nvidia/k8s-device-plugin:v0.17.3",
                                 "volumeMounts": [{"name": "device-plugin",
                                                   "mountPath": "/var/lib/kubelet/device-plugins"}]}]
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": ready}],
              "containerStatuses": [{"name": containers[0]["name"], "ready": ready == "True",
                                     "restartCount": 7 if waiting else 0,
                                     "state": {"waiting": {"reason": waiting}} if waiting
                                     else {"running": {}}}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"nodeName": NODE, "containers": containers,
                     "volumes": [{"name": "device-plugin",
                                  "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}]},
            "status": status}


OPERATOR_LABELS = {"app": "nvidia-device-plugin-daemonset"}
HELM_LABELS = {"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": "nvdp"}


def workload(name="trainer-0", runtime_class="nvidia", bound=True, phase="Pending", gpus=1,
             waiting="ContainerCreating", status_extra=None):
    spec = {"containers": [{"name": "cuda", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
                            "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    status = {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}]}
    if bound:
        spec["nodeName"] = NODE
        status["containerStatuses"] = [{"name": "cuda", "ready": phase == "Running", "restartCount": 0,
                                        "state": {"waiting": {"reason": waiting}} if waiting
                                        else {"running": {}}}]
    status.update(status_extra or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
            "spec": spec, "status": status}


def event(pod, reason, message, namespace="ml"):
    return {"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": reason,
            "metadata": {"name": "%s.1879f3c2a1b4d5e6" % pod, "namespace": namespace},
            "message": message, "involvedObject": {"kind": "Pod", "name": pod, "namespace": namespace}}


class Bundle:
    """A support bundle folder in the issue's layout."""

    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.cluster = {"nodes.json": [node_obj()], "pods.json": [], "runtimeclasses.json": [
            {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
             "handler": "nvidia"}], "events.json": [], "daemonsets.json": []}
        self.node_files = {}
        self.logs = {}

    def write(self):
        """(Re)write the folder: exactly what the object holds now."""
        if self.root.exists():
            shutil.rmtree(self.root)
        for name, items in self.cluster.items():
            if items is None:
                continue
            path = self.root / "cluster" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1))
        for name, text in self.node_files.items():
            path = self.root / "nodes" / NODE / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for (ns, pod), text in self.logs.items():
            path = self.root / "logs" / ns / (pod + ".log")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return str(self.root)


def healthy(tmp_path, info=C22 / "crictl-info-runc-nvidia.json"):
    b = Bundle(tmp_path / "bundle")
    b.cluster["pods.json"] = [plugin_pod("nvidia-device-plugin-daemonset-x7k2p", OPERATOR_LABELS)]
    b.node_files = {"nvidia-smi-query.csv": QUERY_OK, "crictl-info.json": read(info),
                    "containerd-config-dump.toml": read(C22 / "config-dump.toml"),
                    "device-plugins.txt": "kubelet.sock\nnvidia-gpu.sock\n",
                    "dmesg.txt": "[    3.1] Linux version 6.1.0\n"}
    return b


def diagnose(module_runner, bundle, **args):
    out = module_runner(gpu_diagnose.main, dict({"bundle": bundle}, **args))
    assert not out["failed"], out.get("msg")
    assert [l["layer"] for l in out["layers"]] == gl.LAYERS
    return out


def layer(out, name):
    return next(l for l in out["layers"] if l["layer"] == name)


def evidence_text(out, name):
    return json.dumps(layer(out, name)["evidence"])


# --------------------------------------------------------------------- the artefact parsers
def test_crictl_info_of_real_daemons():
    info = ga.parse_crictl_info(read(C16 / "crictl-info-runc.json"))
    assert info["runtimes_running"] == ["runc"] and info["default_runtime"] == "runc"
    assert "cdi_enabled" not in info and info["cdi_absent"]          # 1.6 has no CDI
    info = ga.parse_crictl_info(read(CORPUS / "containerd-1.7.27/crictl-info-cdi-on.json"))
    assert sorted(info["runtimes_running"]) == ["nvidia", "runc"] and info["cdi_enabled"] is True
    assert "runtime_handlers" not in info                            # 1.7: no runtimeHandlers yet
    assert ga.parse_config_dump(read(CORPUS / "containerd-1.7.27/config-dump.toml"))["cdi_enabled_configured"]
    info = ga.parse_crictl_info(read(C22 / "crictl-info-runc-nvidia.json"))
    assert sorted(info["runtimes_running"]) == ["nvidia", "runc"]
    assert info["cdi_enabled"] is True and info["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert sorted(info["runtime_handlers"]) == ["nvidia", "runc"]    # 2.x: default entry {} has no name
    assert info["runtime_binaries"]["nvidia"] == "/usr/bin/nvidia-container-runtime"
    info = ga.parse_crictl_info(read(C22 / "crictl-info-nvidia-default-cdi-off.json"))
    assert info["default_runtime"] == "nvidia" and info["cdi_enabled"] is False
    # crictl's own error when the CRI plugin did not load (1.6.20 after the restart)
    info = ga.parse_crictl_info(read(C16 / "crictl-info-after-restart.err"))
    assert "unknown service runtime.v1.RuntimeService" in info["cri_error"]
    # a 2.x daemon's verbose info that only has runtimeHandlers still names the runtimes
    only = {"status": {}, "runtimeHandlers": [{}, {"name": "nvidia"}, {"name": "runc"}]}
    assert ga.parse_crictl_info(json.dumps(only))["runtimes_running"] == ["nvidia", "runc"]
    with pytest.raises(ga.ArtefactError, match=r"line 2 column"):
        ga.parse_crictl_info('{"config":\n  {"containerd": [}', "nodes/n/crictl-info.json")


def test_config_dumps_and_the_incident_facts():
    dump = ga.parse_config_dump(read(C16 / "config-dump-after-dropin.toml"))
    assert dump == {"runtimes_configured": ["nvidia"], "default_runtime_configured": "runc"}
    dump = ga.parse_config_dump(read(C22 / "config-dump.toml"))
    assert sorted(dump["runtimes_configured"]) == ["nvidia", "runc"]
    assert dump["cdi_enabled_configured"] is True
    facts = ga.facts_from_artefacts({
        "crictl-info.json": read(C16 / "crictl-info-dropin-not-restarted.json"),
        "containerd-config-dump.toml": read(C16 / "config-dump-after-dropin.toml"),
        "containerd.log": read(C16 / "containerd-after-restart.log")})
    assert facts["runtimes_running"] == facts["runtimes_loaded"] == ["runc"]
    assert facts["runtimes_configured"] == ["nvidia"] and facts["restart_pending"] is True
    assert facts["cdi_enabled"] is False
    assert any("no corresponding runtime configured" in line for line in facts["containerd_errors"])
    with pytest.raises(ga.ArtefactError, match="not TOML"):
        ga.parse_config_dump("version = 2\n[plugins\n")


def test_nvidia_smi_kernel_fabric_and_sockets():
    gpus = ga.parse_smi_query(QUERY_OK)
    assert [g["index"] for g in gpus] == [0, 1] and gpus[0]["memory_total_mib"] == 40960
    assert gpus[1]["uuid"].startswith("GPU-7de2") and gpus[0]["name"] == "NVIDIA A100-SXM4-40GB"
    with pytest.raises(ga.ArtefactError, match="line 1.*noheader"):
        ga.parse_smi_query("GPU 0: A100 (UUID: GPU-1)\n")
    lost = ga.facts_from_artefacts({"nvidia-smi.txt": read(REAL / "nvidia-smi-gpu-lost.txt")})
    assert lost["driver_ok"] is False and "GPU is lost" in lost["driver_error"]
    failed = ga.facts_from_artefacts({"nvidia-smi-query.csv": "Failed to initialize NVML: "
                                      "Driver/library version mismatch\n"}, smi_rc=18)
    assert failed == {"driver_ok": False,
                      "driver_error": "Failed to initialize NVML: Driver/library version mismatch"}
    kernel = ga.kernel_nvrm_lines(read(REAL / "dmesg-fallen-off-bus.txt"))
    assert len(kernel) == 5 and ga.gpu_lost_lines(kernel)
    assert ga.xids(ga.kernel_nvrm_lines(read(REAL / "dmesg-xid79.txt")))[0][:2] == (79, "PCI:0000:44:00")
    assert ga.gpu_lost_lines(ga.kernel_nvrm_lines(read(REAL / "dmesg-rminitadapter.txt")))
    assert ga.parse_fabric_manager("LoadState=loaded\nActiveState=failed\n") == "failed"
    assert ga.parse_fabric_manager("Unit nvidia-fabricmanager.service could not be found.") == "not-installed"
    assert ga.parse_fabric_manager("LoadState=not-found\nActiveState=inactive\n") == "not-installed"
    assert ga.parse_fabric_manager("   Active: active (running) since Tue") == "active"
    assert ga.plugin_sockets(["kubelet.sock", "nvidia-gpu.sock", "nvidia-mig-1g.10gb.sock",
                              "other.sock"]) == ["nvidia-gpu.sock", "nvidia-mig-1g.10gb.sock"]
    assert ga.plugin_sockets(["nvidia-gpu.sock", "nvidia-mig-1g.10gb.sock"],
                             ["nvidia.com/mig-1g.10gb"]) == ["nvidia-mig-1g.10gb.sock"]


def test_text_rules_name_the_causing_layer():
    cases = {"plugin-v0.17.3-nvml-not-detected.log": "container-runtime",
             "plugin-v0.11-could-not-load-nvml.log": "container-runtime",
             "plugin-no-devices-found.log": "container-runtime",
             "event-no-runtime-nvidia-1.x.txt": "container-runtime",
             "event-no-runtime-nvidia-2.x.txt": "container-runtime",
             "event-cdi-unresolvable.txt": "container-runtime",
             "pod-admission-gpu-lost.txt": "driver",        # surfaces at admission, caused below
             "pod-admission-no-healthy.txt": "device-plugin",
             "nvidia-smi-gpu-lost.txt": "driver",
             "cuda-802.log": "driver"}
    for name, want in cases.items():
        found = gl.text_findings(read(REAL / name), name)
        assert found and {f["layer"] for f in found} == {want}, (name, found)


# --------------------------------------------------------------------------- bundle judgment
def test_healthy_operator_node_on_cdi_reads_ok(module_runner, tmp_path):
    b = healthy(tmp_path)
    b.cluster["pods.json"].append(workload(runtime_class=None, phase="Running", waiting=None))
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert out["first_broken"] is None and out["source"] == "bundle", out["report"]
    assert all(l["status"] == "ok" for l in out["layers"]), out["report"]
    # judged by the default runtime and CDI, not as if it wanted nvidia
    assert "CDI is on" in layer(out, "container-runtime")["next"]
    assert "cluster/pods.json [gpu-operator/nvidia-device-plugin-daemonset-x7k2p]" in \
        evidence_text(out, "device-plugin")


def test_pod_without_runtimeclass_on_runc_without_cdi_is_broken(module_runner, tmp_path):
    b = healthy(tmp_path, info=C16 / "crictl-info-runc.json")
    b.node_files.pop("containerd-config-dump.toml")
    b.cluster["pods.json"].append(workload(runtime_class=None, phase="Running", waiting=None))
    out = diagnose(module_runner, b.write(), namespace="ml", pod="trainer-0")
    assert out["first_broken"] == "container-runtime"
    assert "default runtime runc" in layer(out, "container-runtime")["next"]
    # the same node with NVIDIA's runtime as the default (2.2.0, CDI off) is fine
    b.node_files["crictl-info.json"] = read(C22 / "crictl-info-nvidia-default-cdi-off.json")
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert layer(out, "container-runtime")["status"] == "ok"


def test_the_incident_drop_in_written_containerd_never_restarted(module_runner, tmp_path):
    b = healthy(tmp_path, info=C16 / "crictl-info-dropin-not-restarted.json")
    b.node_files["containerd-config-dump.toml"] = read(C16 / "config-dump-after-dropin.toml")
    b.cluster["pods.json"].append(workload())
    b.cluster["events.json"] = [event("trainer-0", "FailedCreatePodSandBox",
                                      read(REAL / "event-no-runtime-nvidia-1.x.txt").split("kubelet", 1)[1].strip())]
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    runtime = layer(out, "container-runtime")
    assert out["first_broken"] == "container-runtime" and runtime["status"] == "broken"
    assert "restart is pending" in runtime["next"]
    text = evidence_text(out, "container-runtime")
    assert "restart pending" in text and "no runtime for \\\"nvidia\\\" is configured" in text
    assert "runc gone from the files" in text          # what the next restart would do (1.6)
    # the workload says where its failure is caused
    assert "caused at the container-runtime layer" in evidence_text(out, "workload")


def test_cri_plugin_down_after_restart(module_runner, tmp_path):
    b = healthy(tmp_path)
    b.node_files["crictl-info.json"] = read(C16 / "crictl-info-after-restart.err")
    b.node_files["containerd.log"] = read(C16 / "containerd-after-restart.log")
    out = diagnose(module_runner, b.write(), node=NODE)
    assert out["first_broken"] == "container-runtime"
    assert "failed to load plugin io.containerd.grpc.v1.cri" in evidence_text(out, "container-runtime")


def test_plugin_pods_by_any_labeling_and_not_gfd(module_runner, tmp_path):
    b = healthy(tmp_path)
    gfd = plugin_pod("nvdp-nvidia-device-plugin-gpu-feature-discovery-2xq", HELM_LABELS, containers=[
        {"name": "gpu-feature-discovery-ctr", "command": ["gpu-feature-discovery"]}], namespace="nvdp")
    mps = plugin_pod("nvdp-nvidia-device-plugin-mps-control-daemon-9kz", HELM_LABELS, containers=[
        {"name": "mps-control-daemon-ctr", "command": ["mps-control-daemon"]}], namespace="nvdp")
    b.cluster["pods.json"] = [gfd, mps]
    # the plugin's DaemonSet no longer admits the node (its affinity changed)
    b.cluster["daemonsets.json"] = [{
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nvdp-nvidia-device-plugin",
                                                                 "namespace": "nvdp", "labels": HELM_LABELS},
        "spec": {"template": {"metadata": {"labels": HELM_LABELS}, "spec": {
            "containers": [{"name": "nvidia-device-plugin-ctr"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname",
                                                             "operator": "NotIn", "values": [NODE]}]}]}}}}}},
        "status": {"desiredNumberScheduled": 3, "numberReady": 3}}]
    out = diagnose(module_runner, b.write(), node=NODE)
    assert out["first_broken"] == "device-plugin", out["report"]
    text = evidence_text(out, "device-plugin")
    assert "GPU feature discovery, not the device plugin" in text and "MPS control daemon" in text
    assert "desired 3, ready 3; its nodeSelector/affinity exclude %s" % NODE in text
    b.cluster["daemonsets.json"] = []
    helm = plugin_pod("nvdp-nvidia-device-plugin-8hz4q", HELM_LABELS, namespace="nvdp")
    for labels in (HELM_LABELS, OPERATOR_LABELS, {"name": "nvidia-device-plugin-ds"}):
        b.cluster["pods.json"] = [gfd, mps, dict(copy.deepcopy(helm), metadata=dict(
            helm["metadata"], labels=labels))]
        out = diagnose(module_runner, b.write(), node=NODE)
        assert layer(out, "device-plugin")["status"] == "ok", (labels, out["report"])
    # an explicit selector is the only one used
    out = diagnose(module_runner, b.write(), node=NODE, device_plugin_selector="app=mine")
    assert layer(out, "device-plugin")["status"] == "broken"


def test_plugin_without_nvml_is_a_runtime_break(module_runner, tmp_path):
    b = healthy(tmp_path, info=C16 / "crictl-info-runc.json")
    b.node_files.pop("containerd-config-dump.toml")
    crash = plugin_pod("nvidia-device-plugin-daemonset-x7k2p", OPERATOR_LABELS, phase="Running",
                       ready="False", waiting="CrashLoopBackOff")
    b.cluster["pods.json"] = [crash]
    b.logs[("gpu-operator", crash["metadata"]["name"])] = read(REAL / "plugin-v0.17.3-nvml-not-detected.log")
    out = diagnose(module_runner, b.write(), node=NODE)
    assert out["first_broken"] == "container-runtime", out["report"]
    assert "could not load NVML library" in evidence_text(out, "container-runtime")
    assert layer(out, "device-plugin")["status"] == "broken"
    assert "caused at the container-runtime layer" in evidence_text(out, "device-plugin")


def test_driver_from_nvidia_smi_and_kernel_never_from_a_label(module_runner, tmp_path):
    b = healthy(tmp_path)
    b.node_files.pop("nvidia-smi-query.csv")
    b.node_files["nvidia-smi.txt"] = read(REAL / "nvidia-smi-gpu-lost.txt")
    out = diagnose(module_runner, b.write(), node=NODE)
    assert out["first_broken"] == "driver" and "GPU is lost" in evidence_text(out, "driver")
    assert "fell off the bus" in layer(out, "driver")["next"]
    # nvidia-smi answers, but the kernel says a GPU fell off the bus
    b.node_files["nvidia-smi-query.csv"] = QUERY_OK
    b.node_files.pop("nvidia-smi.txt")
    b.node_files["dmesg.txt"] = read(REAL / "dmesg-fallen-off-bus.txt")
    out = diagnose(module_runner, b.write(), node=NODE)
    assert out["first_broken"] == "driver" and "fallen off the bus" in evidence_text(out, "driver")
    # one GPU of two listed: GFD counted two
    b.node_files["dmesg.txt"] = ""
    b.node_files["nvidia-smi-query.csv"] = QUERY_OK.splitlines()[0] + "\n"
    out = diagnose(module_runner, b.write(), node=NODE)
    assert out["first_broken"] == "driver" and "lists 1 GPU" in layer(out, "driver")["next"]
    # no nvidia-smi output at all: the label is present, still unknown - never ok
    b.node_files.pop("nvidia-smi-query.csv")
    out = diagnose(module_runner, b.write(), node=NODE)
    assert layer(out, "driver")["status"] == "unknown" and layer(out, "driver")["reason"]
    assert "cuda.driver-version.full" in evidence_text(out, "driver")


def test_admission_errors_land_where_they_are_caused(module_runner, tmp_path):
    b = healthy(tmp_path)
    b.node_files.pop("nvidia-smi-query.csv")      # the node side was not collected
    b.cluster["pods.json"].append(workload(phase="Failed", waiting=None, bound=True, status_extra={
        "reason": "UnexpectedAdmissionError", "message": read(REAL / "pod-admission-gpu-lost.txt").strip()}))
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert out["first_broken"] == "driver", out["report"]
    assert "nvml: GPU is lost" in evidence_text(out, "driver")
    assert layer(out, "workload")["status"] == "broken"
    # nvidia-smi answers for both GPUs now: the admission text is history, said as a note
    b.node_files["nvidia-smi-query.csv"] = QUERY_OK
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert layer(out, "driver")["status"] == "ok" and "older error texts" in evidence_text(out, "driver")
    b.cluster["pods.json"][-1]["status"]["message"] = read(REAL / "pod-admission-no-healthy.txt").strip()
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert out["first_broken"] == "device-plugin", out["report"]


def test_unhealthy_gpus_cut_at_the_advertisement(module_runner, tmp_path):
    b = healthy(tmp_path)
    b.cluster["nodes.json"] = [node_obj(gpus="2", alloc="1")]
    b.node_files["dmesg.txt"] = "[ 99.1] NVRM: Xid (PCI:0000:07:00): 48, pid=2187, DBE (double bit error) ...\n"
    pod = workload(bound=False, gpus=2, waiting=None)
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                    "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}]
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE}
    b.cluster["pods.json"].append(pod)
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert out["first_broken"] == "node-advertisement", out["report"]
    assert "only 1 are healthy" in layer(out, "node-advertisement")["next"]
    assert "Xid (PCI:0000:07:00): 48" in evidence_text(out, "node-advertisement")
    assert layer(out, "scheduling")["status"] == "broken"


def test_fabric_manager_down_and_cuda_802(module_runner, tmp_path):
    b = healthy(tmp_path)
    b.node_files["fabric-manager.txt"] = "LoadState=loaded\nActiveState=failed\n"
    out = diagnose(module_runner, b.write(), node=NODE)
    assert out["first_broken"] == "driver" and "Fabric Manager is failed" in layer(out, "driver")["next"]
    # no fabric-manager.txt, but the workload's log has CUDA's 802
    b.node_files.pop("fabric-manager.txt")
    b.cluster["pods.json"].append(workload(phase="Running", waiting=None, runtime_class="nvidia"))
    b.cluster["pods.json"][-1]["status"]["containerStatuses"][0].update(
        {"state": {"terminated": {"exitCode": 1, "reason": "Error"}}, "restartCount": 3})
    b.logs[("ml", "trainer-0")] = read(REAL / "cuda-802.log")
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert out["first_broken"] == "driver" and "802" in evidence_text(out, "driver")


def test_cdi_spec_missing_is_a_runtime_break(module_runner, tmp_path):
    b = healthy(tmp_path)
    b.cluster["pods.json"].append(workload(runtime_class=None))
    b.cluster["events.json"] = [event("trainer-0", "Failed", read(REAL / "event-cdi-unresolvable.txt").strip())]
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert out["first_broken"] == "container-runtime"
    assert "nvidia-ctk cdi generate" in layer(out, "container-runtime")["next"]


# a bundle with no node folder: what it lacks decides the runtime's one outcome - without
# runtimeclasses.json the Pod's handler is unknown; with it, the handler is known and only the
# node's containerd is missing (skipped: it can only be read on the node)
@pytest.mark.parametrize("runtimeclasses,status,reason", [
    (False, "unknown", "the RuntimeClass is not in this source"),
    (True, "skipped", "what the running containerd holds can only be read on the node"),
])
def test_what_a_bundle_lacks_is_skipped_or_unknown(module_runner, tmp_path, runtimeclasses, status, reason):
    b = Bundle(tmp_path / "thin")
    if not runtimeclasses:
        b.cluster["runtimeclasses.json"] = None
    b.cluster["events.json"] = None
    b.cluster["pods.json"] = [plugin_pod("nvidia-device-plugin-daemonset-x7k2p", OPERATOR_LABELS),
                              workload(phase="Running", waiting=None)]
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    statuses = {l["layer"]: l["status"] for l in out["layers"]}
    assert statuses == {"driver": "unknown", "container-runtime": status, "device-plugin": "ok",
                        "node-advertisement": "ok", "scheduling": "ok", "workload": "ok"}
    assert layer(out, "driver")["reason"] == "nvidia-smi was not run on %s (the bundle has no nodes/%s/)" % (NODE, NODE)
    assert layer(out, "container-runtime")["reason"] == reason
    assert out["first_broken"] is None
    # no pods.json at all: the device plugin cannot be judged, and a Pod cannot be read
    (tmp_path / "thin" / "cluster" / "pods.json").unlink()
    out = diagnose(module_runner, str(tmp_path / "thin"), node=NODE)
    assert layer(out, "device-plugin")["status"] == "skipped"
    bad = module_runner(gpu_diagnose.main, {"bundle": str(tmp_path / "thin"), "pod": "ml/trainer-0"})
    assert bad["failed"] and "cannot be read here" in bad["msg"]


def test_bad_bundles_and_options_are_refused_plainly(module_runner, tmp_path):
    b = healthy(tmp_path)
    root = b.write()
    (tmp_path / "bundle" / "cluster" / "nodes.json").write_text('{"items": [\n  {"metadata": }\n]}')
    out = module_runner(gpu_diagnose.main, {"bundle": root, "node": NODE})
    assert out["failed"] and "cluster/nodes.json line 2" in out["msg"] and "kubectl get" in out["msg"]
    b.write()
    (tmp_path / "bundle" / "nodes" / NODE / "crictl-info.json").write_text('{"config": {\n')
    out = module_runner(gpu_diagnose.main, {"bundle": root, "node": NODE})
    assert out["failed"] and "crictl-info.json" in out["msg"] and "line" in out["msg"]
    out = module_runner(gpu_diagnose.main, {"bundle": str(tmp_path / "nothing"), "node": NODE})
    assert out["failed"] and "not a folder" in out["msg"]
    (tmp_path / "empty").mkdir()
    out = module_runner(gpu_diagnose.main, {"bundle": str(tmp_path / "empty"), "node": NODE})
    assert out["failed"] and "must-gather" in out["msg"]
    out = module_runner(gpu_diagnose.main, {"bundle": root, "kubeconfig": "/x", "node": NODE})
    assert out["failed"] and "mutually exclusive" in out["msg"]
    out = module_runner(gpu_diagnose.main, {"bundle": root, "pod": "trainer-0"})
    assert out["failed"] and "NS/NAME" in out["msg"]


def test_node_facts_contract_keys_are_validated():
    ok = {"driver_ok": True, "gpus": [{"index": 0}], "runtimes_running": ["runc"],
          "runtimes_configured": ["runc", "nvidia"], "restart_pending": True, "cdi_enabled": False,
          "kernel_xid": ["NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"],
          "fabric_manager": "active", "device_plugin_sockets": ["nvidia-gpu.sock"],
          "mig_lgip": "", "cri_error": "x", "containerd_errors": [], "driver_error": "x",
          "nvidia_smi": "chroot /run/nvidia/driver nvidia-smi", "runtime_binaries": {}}
    assert gdiag.check_facts({"n": ok}) is None
    assert "must be a list" in gdiag.check_facts({"n": {"kernel_xid": "Xid 79"}})
    assert "must list strings" in gdiag.check_facts({"n": {"device_plugin_sockets": [1]}})
    assert "gpus must list mappings" in gdiag.check_facts({"n": {"gpus": ["GPU-1"]}})


# ---------------------------------------------------------------------------- must-gather
def must_gather(tmp_path, log_name="plugin-v0.17.3-nvml-not-detected.log"):
    root = tmp_path / "nvidia-gpu-operator_20261201_2210"
    root.mkdir()
    (root / "gpu_nodes.labels").write_text(
        "%s\n- beta.kubernetes.io/arch=amd64\n- nvidia.com/gpu.count=2\n- nvidia.com/gpu.present=true\n"
        "- nvidia.com/cuda.driver-version.full=550.54.15\n\n" % NODE)
    (root / "gpu_nodes.descr").write_text(
        "Name:               %s\nRoles:              <none>\nLabels:             nvidia.com/gpu.present=true\n"
        "                    nvidia.com/gpu.count=2\nTaints:             <none>\nUnschedulable:      false\n"
        "Conditions:\n  Type             Status  LastHeartbeatTime                 Reason\n"
        "  ----             ------  -----------------                 ------\n"
        "  Ready            True    Tue, 01 Dec 2026 22:00:00 +0000   KubeletReady\n"
        "Capacity:\n  cpu:                64\n  nvidia.com/gpu:     2\nAllocatable:\n  cpu:                64\n"
        "  nvidia.com/gpu:     2\nSystem Info:\n  Machine ID: x\n" % NODE)
    crash = plugin_pod("nvidia-device-plugin-daemonset-x7k2p", OPERATOR_LABELS, ready="False",
                       waiting="CrashLoopBackOff")
    import yaml
    (root / "gpu_operand_pods.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                                 "items": [crash]}))
    (root / ("gpu_operand_pod_%s.log" % crash["metadata"]["name"])).write_text(read(REAL / log_name))
    (root / ("gpu_operand_pod_%s.descr" % crash["metadata"]["name"])).write_text(
        "Name: %s\nEvents:\n  Type     Reason   Age   From     Message\n  ----     ------   ----  ----     -------\n"
        "  Warning  BackOff  2m    kubelet  Back-off restarting failed container\n" % crash["metadata"]["name"])
    report = ("nvidia-bug-report.sh log\n____________________________________________\n\n"
              "/usr/bin/nvidia-smi --query\n\nTimestamp : Tue Dec  1 22:00:00 2026\n"
              "Driver Version                            : 550.54.15\nAttached GPUs : 2\n"
              "____________________________________________\n\ndmesg:\n" + read(REAL / "dmesg-xid79.txt"))
    with gzip.open(root / ("nvidia-bug-report_%s.log.gz" % NODE), "wt") as handle:
        handle.write(report)
    return root


def test_must_gather_folder(module_runner, tmp_path):
    root = must_gather(tmp_path)
    out = diagnose(module_runner, str(root), node=NODE)
    assert out["source"] == "must-gather"
    # the bug report's kernel lines hold Xid 79: the driver layer is cut there
    assert out["first_broken"] == "driver", out["report"]
    assert "nvidia-bug-report_%s.log.gz" % NODE in evidence_text(out, "driver")
    # without the Xid: what the must-gather cannot say is said, the plugin's log decides
    with gzip.open(root / ("nvidia-bug-report_%s.log.gz" % NODE), "wt") as handle:
        handle.write("/usr/bin/nvidia-smi --query\nDriver Version : 550.54.15\nAttached GPUs : 2\n")
    out = diagnose(module_runner, str(root), node=NODE)
    assert layer(out, "driver")["status"] == "ok"
    assert out["first_broken"] == "container-runtime", out["report"]
    assert "gpu_operand_pod_nvidia-device-plugin-daemonset-x7k2p.log" in evidence_text(out, "container-runtime")
    assert layer(out, "node-advertisement")["status"] == "ok"
    assert any("crictl info" in limit for limit in out["limits"]) and "it cannot hold" in out["report"]
    nodes = mg.parse_describe_nodes(read(root / "gpu_nodes.descr"))
    assert nodes[NODE]["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert mg.parse_node_labels(read(root / "gpu_nodes.labels"))[NODE]["nvidia.com/gpu.count"] == "2"
    bad = module_runner(gpu_diagnose.main, {"bundle": str(root), "pod": "ml/trainer-0"})
    assert bad["failed"] and "does not exist" in bad["msg"]


def test_bundle_index_keeps_what_failed(module_runner, tmp_path):
    """gpu_support_bundle writes a file only from a command that worked; a failure's exit code
    and output live in bundle.json - they are facts too."""
    b = healthy(tmp_path)
    for name in ("crictl-info.json", "nvidia-smi-query.csv", "containerd-config-dump.toml"):
        b.node_files.pop(name)
    root = b.write()
    index = {"format": "gpu-incident-lab/support-bundle", "version": 1, "files": {
        "nodes/%s/crictl-info.json" % NODE: {"status": "failed", "rc": 1,
                                             "output": read(C16 / "crictl-info-after-restart.err"),
                                             "reason": "exit 1"},
        "nodes/%s/nvidia-smi-query.csv" % NODE: {"status": "failed", "rc": 18, "output":
                                                 "Failed to initialize NVML: Driver/library version mismatch"},
        "nodes/%s/containerd-config-dump.toml" % NODE: {"status": "missing",
                                                        "reason": "containerd not installed"}}}
    (tmp_path / "bundle" / "bundle.json").write_text(json.dumps(index))
    out = diagnose(module_runner, root, node=NODE)
    assert out["first_broken"] == "driver" and "version mismatch" in evidence_text(out, "driver")
    assert "reboot" in layer(out, "driver")["next"]
    assert layer(out, "container-runtime")["status"] == "broken"
    assert "unknown service runtime.v1.RuntimeService" in evidence_text(out, "container-runtime")
    index["files"]["nodes/%s/crictl-info.json" % NODE] = {"status": "missing", "reason": "crictl not installed"}
    (tmp_path / "bundle" / "bundle.json").write_text(json.dumps(index))
    out = diagnose(module_runner, root, node=NODE)
    runtime = layer(out, "container-runtime")
    assert runtime["status"] == "skipped" and "crictl not installed" in runtime["reason"]


def test_gpu_diagnosis_role_reads_a_bundle_in_check_mode(tmp_path):
    """The role as the README runs it, on a bundle folder, under --check: judged, nothing written."""
    import os
    import subprocess
    import sys
    b = healthy(tmp_path, info=C16 / "crictl-info-dropin-not-restarted.json")
    b.node_files["containerd-config-dump.toml"] = read(C16 / "config-dump-after-dropin.toml")
    b.cluster["pods.json"].append(workload())
    root = b.write()
    (tmp_path / "site.yml").write_text("""
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: {python}
  roles:
    - role: gpu_diagnosis
      vars:
        gpu_diagnosis_bundle: {root}
        gpu_diagnosis_pod: ml/trainer-0
        gpu_diagnosis_dest: {tmp}/report.md
        gpu_diagnosis_fail_on_broken: true
""".format(python=sys.executable, root=root, tmp=tmp_path))
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                          "-i", "localhost,", str(tmp_path / "site.yml"), "--check", "--diff"],
                         cwd=ROOT, env=dict(os.environ, ANSIBLE_FORCE_COLOR="0"),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0, out.stdout[-2000:]
    assert "broken at container-runtime on %s" % NODE in out.stdout, out.stdout[-2000:]
    assert "restart is pending" in out.stdout
    assert not (tmp_path / "report.md").exists()


def test_the_labs_real_node_in_the_incident(module_runner, tmp_path):
    """lab-node-1's own crictl info and config dump (real containerd 1.6.20, captured from the
    running node: diagnosis_corpus/real-node-lab-node-1/README.md) in a bundle."""
    real = CORPUS / "real-node-lab-node-1"
    b = Bundle(tmp_path / "rn1")
    b.cluster["nodes.json"] = json.loads(read(real / "nodes.json"))["items"]
    node = b.cluster["nodes.json"][0]["metadata"]["name"]
    b.cluster["pods.json"] = [dict(plugin_pod("nvidia-device-plugin-daemonset-cjlfr", {"name": "nvidia-device-plugin-ds"},
                                              namespace="kube-system"))]
    b.cluster["pods.json"][0]["spec"]["nodeName"] = node
    root = b.write()
    folder = pathlib.Path(root) / "nodes" / node
    folder.mkdir(parents=True)
    for name in ("crictl-info.json", "containerd-config-dump.toml", "device-plugins.txt"):
        shutil.copy(real / name, folder / name)
    facts = bundle_source.BundleSource(root).facts(node)
    assert facts["runtimes_running"] == ["runc"] and facts["runtimes_configured"] == ["nvidia"]
    assert facts["restart_pending"] is True and facts["device_plugin_sockets"] == []
    out = diagnose(module_runner, root, node=node)
    runtime = layer(out, "container-runtime")
    assert out["first_broken"] == "container-runtime" and "restart pending" in runtime["next"]
    assert "drops runc" in runtime["next"]
    assert layer(out, "driver")["status"] == "unknown"      # no nvidia-smi on that node


def test_mig_single_strategy_counts_are_not_a_lost_gpu(module_runner, tmp_path):
    # GFD under migStrategy=single counts MIG devices in nvidia.com/gpu.count (7 on one A100)
    b = healthy(tmp_path)
    b.cluster["nodes.json"] = [node_obj(gpus="7", labels={"nvidia.com/gpu.count": "7",
                                                          "nvidia.com/mig.strategy": "single"})]
    b.node_files["nvidia-smi-query.csv"] = QUERY_OK.splitlines()[0] + "\n"
    out = diagnose(module_runner, b.write(), node=NODE)
    assert layer(out, "driver")["status"] == "ok" and out["first_broken"] is None, out["report"]


def test_kubelet_log_of_a_bundle_is_read(module_runner, tmp_path):
    b = healthy(tmp_path)
    b.node_files.pop("crictl-info.json")
    b.node_files.pop("containerd-config-dump.toml")
    b.node_files["kubelet.log"] = ('E1201 22:01:02.123456    1234 pod_workers.go:1301] "Error syncing pod" '
                                   'err="failed to \\"CreatePodSandbox\\" for \\"trainer-0_ml\\": '
                                   + read(REAL / "event-no-runtime-nvidia-2.x.txt").strip() + '"\n')
    b.cluster["pods.json"].append(workload())
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert out["first_broken"] == "container-runtime", out["report"]
    assert "kubelet.log" in evidence_text(out, "container-runtime")


@pytest.mark.parametrize("info, expected", [
    (C16 / "crictl-info-runc.json", "broken"),                              # 1.6: no CDI, runc default
    (CORPUS / "containerd-1.7.27/crictl-info-cdi-on.json", "ok"),           # 1.7: CDI on
    (C22 / "crictl-info-runc-nvidia.json", "ok"),                           # 2.2: CDI on by default
    (C22 / "crictl-info-nvidia-default-cdi-off.json", "ok")])               # 2.2: nvidia default
def test_pod_without_runtimeclass_across_containerd_versions(module_runner, tmp_path, info, expected):
    b = healthy(tmp_path, info=info)
    b.node_files.pop("containerd-config-dump.toml")
    b.cluster["pods.json"].append(workload(runtime_class=None, phase="Running", waiting=None))
    out = diagnose(module_runner, b.write(), pod="ml/trainer-0")
    assert layer(out, "container-runtime")["status"] == expected, out["report"]


BUNDLES = TESTS / "bundle_corpus"


def test_real_gpu_stack_kernel_update_bundle_names_the_driver_in_its_own_words(module_runner):
    """lab-node-1 with NVIDIA's device plugin over the mock NVML, after the version mismatch of a
    kernel update (bundle_corpus/lab-node-1-kernel-update/SOURCE.md): the driver layer is the first
    broken one, quoting nvidia-smi and the plugin; the advertisement shows the kubelet's 0 of 20."""
    out = diagnose(module_runner, str(BUNDLES / "lab-node-1-kernel-update"), node="lab-node-1")
    assert out["first_broken"] == "driver"
    text = evidence_text(out, "driver")
    assert "Failed to initialize NVML: Driver/library version mismatch" in text
    assert "nvml init failed: Driver/library version mismatch" in text
    assert layer(out, "node-advertisement")["status"] == "broken"
    assert '"0"' in evidence_text(out, "node-advertisement") and '"20"' in evidence_text(out, "node-advertisement")


def test_real_gpu_stack_xid_bundle_shows_the_unhealthy_replica(module_runner):
    """The same node after an Xid 79 on one GPU (bundle_corpus/lab-node-1-xid/SOURCE.md): the
    plugin marked one replica unhealthy (19 of 20, NVIDIA/k8s-device-plugin#1929), the finding and
    the plugin's own words are evidence; the node still fits a 1-GPU Pod, and what is broken is the
    incident's container runtime (only runc loaded)."""
    out = diagnose(module_runner, str(BUNDLES / "lab-node-1-xid"), node="lab-node-1")
    assert out["first_broken"] == "container-runtime"
    assert [layer(out, n)["status"] for n in ("driver", "device-plugin", "node-advertisement")] == ["ok"] * 3
    text = evidence_text(out, "node-advertisement")
    assert "1 of 20 nvidia.com/gpu not allocatable" in text
    assert "XidCriticalError: Xid=79 on Device=GPU-" in text and "marking device as unhealthy" in text


def test_real_gpu_stack_plugin_without_its_socket_folder_quotes_the_plugin(module_runner):
    """Drill plugin-no-mount on lab-node-1 (bundle_corpus/lab-node-1-plugin-no-mount/SOURCE.md):
    NVIDIA's plugin v0.19.3 without /var/lib/kubelet/device-plugins crash-loops; the device-plugin
    layer is the first broken one and says what the plugin said last, in its own words (not only
    its status); the kubelet's 0 allocatable of 20 is a consequence above it."""
    out = diagnose(module_runner, str(BUNDLES / "lab-node-1-plugin-no-mount"), pod="gpu-drill/cuda-drill")
    assert out["first_broken"] == "device-plugin", out["report"]
    assert [layer(out, n)["status"] for n in ("driver", "container-runtime")] == ["ok", "ok"]
    plugin = layer(out, "device-plugin")
    # one file of both containers (kubectl logs --all-containers): the last error lines of it,
    # newest first - config-manager's consequence, then the plugin's own
    assert "it said last: E1203" in plugin["next"]
    said = [e for e in plugin["evidence"] if "(all containers; failing: nvidia-device-plugin, config-manager)" in e["source"]]
    assert [e["value"].split("] ", 1)[1] for e in said] == [
        "error finding pid: no process found",
        "failed to create FS watcher for /var/lib/kubelet/device-plugins/: no such file or directory"], plugin["evidence"]
    assert said[0]["source"].startswith("logs/gpu-operator/nvidia-device-plugin-daemonset-"), said
    assert "mounts /var/lib/kubelet/device-plugins: no" in evidence_text(out, "device-plugin")
    assert '"0"' in evidence_text(out, "node-advertisement") and '"20"' in evidence_text(out, "node-advertisement")
