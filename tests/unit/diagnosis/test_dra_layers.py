"""Issue 48 item 7: gpu_diagnose walks a Pod that gets its GPU by ResourceClaim - the container
runtime judged by CDI, the DRA kubelet plugin in place of the device plugin, ResourceSlices in
place of node allocatable, the claims' allocation and requests at scheduling - from a support
bundle holding the real objects of the lab's lab-node-2 (diagnosis_corpus/dra-lab-node-2/README.md:
NVIDIA's DRA driver v0.4.1 on containerd 1.6.20, then 2.2.0)."""
import json
import pathlib

from lab_testing import DRA_CORPUS as CORPUS, dra_corpus_bundle as bundle  # tests/lab_testing.py

import gpu_diagnose
from ansible.module_utils.node import cdi as node_cdi

NODE = "lab-node-2"
POD = "dra-lab/gpu-by-claim"
CLAIM_UID = "05b595ad-06e3-4f09-8f7d-60128621dde8"
SPEC = "/var/run/cdi/k8s.gpu.nvidia.com-claim_%s.yaml" % CLAIM_UID
ADDS = "/dev/nvidia2, /dev/nvidia-uvm-tools, /dev/nvidia-uvm, /dev/nvidiactl"


def node_side(root, version, root_dir=CORPUS / "node-root"):
    """The node's CDI summaries in the bundle, made by the collector's own code (node/cdi.py) of the
    corpus: the spec folders under `root_dir` (lab-node-2's /), the containers of crictl inspect
    recorded on containerd `version` (README.md)."""
    folder = pathlib.Path(root) / "nodes" / NODE
    specs = node_cdi.read_specs(node_cdi.DEFAULT_SPEC_DIRS, str(root_dir))
    (folder / "cdi-specs.json").write_text(json.dumps(specs))
    if version:
        docs = node_cdi.inspected((CORPUS / ("crictl-inspect-%s.json" % version)).read_text())
        (folder / "container-devices.json").write_text(json.dumps(node_cdi.containers_summary(docs)))
    return root


def diagnose(module_runner, root, pod=POD):
    ns, name = pod.split("/")
    out = module_runner(gpu_diagnose.main, {"bundle": root, "namespace": ns, "pod": name})
    assert not out["failed"], out.get("msg")
    return out, {l["layer"]: l for l in out["layers"]}


def said(layer):
    return json.dumps(layer["evidence"])


def test_on_containerd_1_6_the_claims_gpu_is_dropped_and_the_container_runtime_is_named(module_runner, tmp_path):
    out, layers = diagnose(module_runner, bundle(tmp_path, "crictl-info-1.6.20.json"))
    assert out["first_broken"] == "container-runtime" and out["node"] == NODE
    runtime = layers["container-runtime"]
    assert "knows no CDI" in runtime["next"] and "containerd 1.6" in runtime["next"]
    assert "the claim is allocated (gpu-" in runtime["next"] and "its containers have no GPU" in runtime["next"]
    assert "resourceclaims.json [dra-lab/gpu-by-claim-gpu-" in said(runtime)
    # the layers above still judged: the plugin runs and registered, the node publishes 4 GPUs
    assert layers["device-plugin"]["status"] == "ok" and "plugin_registered:true" in said(layers["device-plugin"])
    assert layers["node-advertisement"]["status"] == "ok"
    assert "gpu-0, gpu-1, gpu-2, gpu-3" in said(layers["node-advertisement"])
    assert layers["workload"]["status"] == "ok"       # Running: only the container-runtime layer tells


def test_on_containerd_2_2_the_same_pod_has_its_path_whole(module_runner, tmp_path):
    out, layers = diagnose(module_runner, bundle(tmp_path, "crictl-info-2.2.0.json"))
    assert out["first_broken"] is None, out["report"]
    assert layers["container-runtime"]["status"] == "ok" and "CDI is on" in layers["container-runtime"]["next"]
    assert "DRA kubelet plugin runs on lab-node-2" in layers["device-plugin"]["next"]
    assert "not in node status" in said(layers["node-advertisement"])


def test_no_plugin_pod_and_no_slices_are_named_at_their_layers(module_runner, tmp_path):
    def no_plugin(cluster):
        cluster["pods.json"]["items"] = [p for p in cluster["pods.json"]["items"]
                                         if p["metadata"]["namespace"] != "nvidia-dra-driver-gpu"]
    out, layers = diagnose(module_runner, bundle(tmp_path / "a", "crictl-info-2.2.0.json", no_plugin))
    assert out["first_broken"] == "device-plugin"
    assert "deploy the DRA driver's kubelet plugin to lab-node-2" in layers["device-plugin"]["next"]

    def no_slices(cluster):
        cluster["resourceslices.json"]["items"] = []
    out, layers = diagnose(module_runner, bundle(tmp_path / "b", "crictl-info-2.2.0.json", no_slices))
    assert out["first_broken"] == "node-advertisement"
    assert "no device of gpu.nvidia.com is published for lab-node-2" in layers["node-advertisement"]["next"]


def test_a_bundle_without_dras_files_says_so_instead_of_guessing(module_runner, tmp_path):
    root = pathlib.Path(bundle(tmp_path, "crictl-info-2.2.0.json"))
    (root / "cluster/resourceslices.json").unlink()
    (root / "cluster/resourceclaims.json").unlink()
    out, layers = diagnose(module_runner, str(root))
    assert layers["node-advertisement"]["status"] == "skipped"
    assert "cluster/resourceslices.json" in layers["node-advertisement"]["reason"]
    assert "not readable: the bundle has no cluster/resourceclaims.json" in said(layers["container-runtime"])


def test_on_containerd_1_6_the_finding_cites_the_claims_cdi_spec_and_the_containers_devices(module_runner, tmp_path):
    """Issue 48 item 6: the claim's allocation (device and request), the claim's CDI spec on the node
    and the devices it would add, crictl info without enableCDI, and the container's own /dev."""
    out, layers = diagnose(module_runner, node_side(bundle(tmp_path, "crictl-info-1.6.20.json"), "1.6.20"))
    runtime = layers["container-runtime"]
    assert out["first_broken"] == "container-runtime" and runtime["status"] == "broken"
    # the finding's words stay
    assert "knows no CDI" in runtime["next"] and "the claim is allocated (gpu-2)" in runtime["next"]
    assert "its containers have no GPU" in runtime["next"]
    said = {e["source"]: e["value"] for e in runtime["evidence"] if e["source"] != "finding"}
    assert said["cluster/resourceclaims.json [dra-lab/gpu-by-claim-gpu-x8cj7] .status.allocation"] == \
        "gpu.nvidia.com/lab-node-2/gpu-2 (request gpu)"
    assert said["nodes/lab-node-2/ cdi_specs %s" % SPEC] == (
        "claim gpu-by-claim-gpu-x8cj7: kind k8s.gpu.nvidia.com/claim, cdiVersion 0.5.0: device %s-gpu-2 adds "
        "/dev/nvidia2; with it the spec adds /dev/nvidia-uvm-tools, /dev/nvidia-uvm, /dev/nvidiactl" % CLAIM_UID)
    assert said["nodes/lab-node-2/ cdi_enabled (crictl info .config)"].startswith("no enableCDI and no cdiSpecDirs")
    container = "nodes/lab-node-2/ container_devices [ctr] (crictl inspect 35496e1cbcee2: .info.runtimeSpec.linux.devices)"
    assert said[container] == "no /dev/nvidia* device - the claim's CDI spec adds " + ADDS
    # the kubelet's CDI ids never reached 1.6's CRI config: no CDI_devices field to show
    assert not [s for s in said if "CDI_devices" in s]
    findings = [e["value"] for e in runtime["evidence"] if e["source"] == "finding"]
    assert "container ctr of dra-lab/gpu-by-claim has none of the device nodes its claim's CDI spec adds (%s not there)" \
        % ADDS in findings


def test_on_containerd_2_2_the_container_has_what_the_claims_spec_adds(module_runner, tmp_path):
    out, layers = diagnose(module_runner, node_side(bundle(tmp_path, "crictl-info-2.2.0.json"), "2.2.0"))
    runtime = layers["container-runtime"]
    assert out["first_broken"] is None and runtime["status"] == "ok"
    said = {e["source"]: e["value"] for e in runtime["evidence"]}
    assert said["nodes/lab-node-2/ cdi_enabled (crictl info .config)"] == "enableCDI true, cdiSpecDirs /etc/cdi, /var/run/cdi"
    devices = "nodes/lab-node-2/ container_devices [ctr] (crictl inspect d76c76404629c: .info.runtimeSpec.linux.devices)"
    assert said[devices] == ("/dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia2, /dev/nvidiactl - the claim's "
                             "CDI spec adds " + ADDS)
    assert said["nodes/lab-node-2/ container_devices [ctr] (crictl inspect d76c76404629c: .info.config.CDI_devices)"] \
        == "k8s.gpu.nvidia.com/claim=%s-gpu-2" % CLAIM_UID
    assert "note" not in said            # nothing the spec adds is missing


def test_without_the_containers_devices_the_pods_own_words_are_cited(module_runner, tmp_path):
    out, layers = diagnose(module_runner, node_side(bundle(tmp_path, "crictl-info-1.6.20.json"), None))
    said = [(e["source"], e["value"]) for e in layers["container-runtime"]["evidence"]]
    assert ("logs/dra-lab/gpu-by-claim.log (the Pod's own words)", "/bin/sh: nvidia-smi: not found") in said
    assert ("logs/dra-lab/gpu-by-claim.log (the Pod's own words)", "ls: /dev/nvidia*: No such file or directory") in said
    assert "nodes/lab-node-2/ cdi_specs %s" % SPEC in dict(said)


def test_a_claim_without_its_cdi_spec_on_the_node_says_where_it_was_looked_for(module_runner, tmp_path):
    empty = tmp_path / "root"
    (empty / "etc/cdi").mkdir(parents=True)
    out, layers = diagnose(module_runner, node_side(bundle(tmp_path, "crictl-info-1.6.20.json"), "1.6.20", empty))
    said = {e["source"]: e["value"] for e in layers["container-runtime"]["evidence"] if e["source"] != "finding"}
    assert said["nodes/lab-node-2/ cdi_specs"] == (
        "no CDI spec of claim gpu-by-claim-gpu-x8cj7 (uid %s) in /etc/cdi (read), /var/run/cdi (absent): the DRA "
        "kubelet plugin writes it when the kubelet prepares the claim (NVIDIA's: /var/run/cdi/"
        "k8s.gpu.nvidia.com-claim_%s.yaml)" % (CLAIM_UID, CLAIM_UID))
    assert said[next(s for s in said if s.startswith("nodes/lab-node-2/ container_devices [ctr]"))] == "no /dev/nvidia* device"
