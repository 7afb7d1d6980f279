"""Issue 48 item 7: gpu_diagnose walks a Pod that gets its GPU by ResourceClaim - the container
runtime judged by CDI, the DRA kubelet plugin in place of the device plugin, ResourceSlices in
place of node allocatable, the claims' allocation and requests at scheduling - from a support
bundle holding the real objects of the lab's lab-node-2 (diagnosis_corpus/dra-lab-node-2/README.md:
NVIDIA's DRA driver v0.4.1 on containerd 1.6.20, then 2.2.0)."""
import json
import pathlib
import shutil

from lab_testing import TESTS  # tests/lab_testing.py

import gpu_diagnose

CORPUS = TESTS / "diagnosis_corpus/dra-lab-node-2"
NODE = "lab-node-2"
POD = "dra-lab/gpu-by-claim"


def bundle(tmp_path, crictl, edit=None):
    """A bundle folder of the corpus with `crictl` as the node's crictl info; `edit(cluster)`
    changes the cluster files ({name: document}) first."""
    root = tmp_path / "bundle"
    (root / "cluster").mkdir(parents=True)
    cluster = {name: json.loads((CORPUS / name).read_text()) for name in (
        "nodes.json", "pods.json", "events.json", "resourceclaims.json", "resourceslices.json", "deviceclasses.json")}
    if edit:
        edit(cluster)
    for name, doc in cluster.items():
        (root / "cluster" / name).write_text(json.dumps(doc))
    (root / "logs/nvidia-dra-driver-gpu").mkdir(parents=True)
    for plugin in [p["metadata"]["name"] for p in cluster["pods.json"]["items"]
                   if p["metadata"]["namespace"] == "nvidia-dra-driver-gpu"]:
        shutil.copy(CORPUS / "kubelet-plugin.log", root / "logs/nvidia-dra-driver-gpu" / (plugin + ".log"))
    (root / "logs/dra-lab").mkdir(parents=True)
    shutil.copy(CORPUS / "gpu-by-claim.log", root / "logs/dra-lab/gpu-by-claim.log")
    (root / "nodes" / NODE).mkdir(parents=True)
    shutil.copy(CORPUS / crictl, root / "nodes" / NODE / "crictl-info.json")
    return str(root)


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
