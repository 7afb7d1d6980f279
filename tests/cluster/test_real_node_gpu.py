"""NVIDIA's GPU stack on the real lab-node-1 (over the mock NVML), on a lab of its own so it runs
beside tests/cluster/test_real_node.py: step 7's 20 from NVIDIA's device plugin, GPU faults read
live, MIG through mig-parted, the plugin and GFD; then, after the reboot fix, seed 003's GPU Pods,
a MIG Pod and the drills that break NVIDIA's own components. Skipped where the machine cannot run
a real node.
"""
import json
import re

import pytest

from real_node_lab import (  # tests/cluster/real_node_lab.py: the lab both real-node modules drive
    BIN, MIG_POD, NODE, allocated, capability_pod, diagnosed, drill, fixed, flat, graded, mig, play,
    real_lab, sh, CAPABILITY)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with real_lab(tmp_path_factory) as made:
        yield made


def test_step_7_through_nvidia_s_device_plugin(lab):
    """lab-node-1's 20 come from NVIDIA's device plugin (over the mock NVML), not from a patch: the
    GPU Operator's labels deployed it with the config, and a hand patch is undone by the kubelet."""
    node = lab.node()
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "true" and labels["nvidia.com/device-plugin.config"] == "any"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "20" and node["status"]["capacity"]["nvidia.com/gpu"] == "20"
    log = lab.kubectl("-n", "gpu-operator", "logs", "ds/nvidia-device-plugin-daemonset", "-c", "nvidia-device-plugin").stdout
    assert "Registered device plugin for 'nvidia.com/gpu' with Kubelet" in log
    assert "Got registration request from device plugin" in (lab.node_dir / "kubelet.log").read_text()
    assert sh(lab.node_dir / "bin/nvidia-smi", "-L").stdout.count("NVIDIA A100-SXM4-40GB (UUID: GPU-") == 4
    lab.kubectl("patch", "node", NODE, "--subresource=status", "--type=merge",
                "-p", '{"status":{"capacity":{"nvidia.com/gpu":"99"},"allocatable":{"nvidia.com/gpu":"99"}}}')
    lab.wait("the kubelet to write back what its device plugin advertises",
             lambda: lab.node()["status"]["capacity"].get("nvidia.com/gpu") == "20", 60)
    # seed 003's preflight, on this node, records passed where the seed had to write skipped
    play("playbooks/preflight.yml", "-e", "node=%s" % NODE, "-e", "experiment_id=rn-node-check", *lab.extra)
    record = json.loads((lab.state / "preflight/rn-node-check.json").read_text())
    assert record["status"] == "passed" and "MOCK NVML" in record["reason"]
    assert [record["layers"][layer]["status"] for layer in ("driver", "container-runtime", "device-plugin")] == ["verifiable"] * 3


def test_gpu_faults_are_read_live_in_the_components_own_words(lab):
    """An Xid marks one replica unhealthy (20 -> 19, NVIDIA/k8s-device-plugin#1929); the version
    mismatch of a kernel update stops NVML - nvidia-smi and the plugin say so, and gpu_diagnose on
    lab-node-1 names the driver layer quoting them; healthy again afterwards."""
    out, _ = play("playbooks/gpu-fault.yml", "-e", "fault=xid", *lab.extra)
    node = lab.node()["status"]
    assert node["capacity"]["nvidia.com/gpu"] == "20" and node["allocatable"]["nvidia.com/gpu"] == "19"
    log = lab.kubectl("-n", "gpu-operator", "logs", "ds/nvidia-device-plugin-daemonset", "-c", "nvidia-device-plugin").stdout
    assert re.search(r"XidCriticalError: Xid=79 on Device=GPU-[0-9a-f-]+::\d; marking device as unhealthy", log)
    play("playbooks/gpu-fault.yml", "-e", "fault=kernel-update", *lab.extra)
    smi = sh(lab.node_dir / "bin/nvidia-smi", check=False)
    assert smi.returncode == 18 and smi.stdout.startswith("Failed to initialize NVML: Driver/library version mismatch")
    play("playbooks/diagnose.yml", "-e", "node=%s" % NODE, *lab.extra)
    result = json.loads((lab.state / "diagnosis.json").read_text())
    assert result["first_broken"] == "driver"
    driver = [l for l in result["layers"] if l["layer"] == "driver"][0]
    evidence = json.dumps(driver["evidence"])
    assert "Failed to initialize NVML: Driver/library version mismatch" in evidence     # nvidia-smi's words
    # the plugin's own words: with MIG_STRATEGY=mixed (the lab's since issue 40) NVML first fails
    # where it adds the MIG resources (internal/rm/rm.go), before its resource managers
    assert "unable to add default resources to config: failed to initialize NVML: Driver/library version mismatch" in evidence
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "0"
    play("playbooks/gpu-fault.yml", "-e", "fault=none", *lab.extra)
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "20"
    out, counts = play("lab.yml", *lab.extra)
    assert counts["changed"] == 0, out.stdout[-3000:]


def test_mig_for_real_through_nvidia_s_mig_parted_plugin_and_gfd(lab):
    """Issue 40: NVIDIA's nvidia-mig-parted lays the mock's 4 x A100-SXM4-40GB out by the GPU
    Operator's config names and k8s-mig-manager's labels; NVIDIA's device plugin (mixed) advertises
    what it made through the kubelet, GFD's labels arrive through nfd-master; a rerun changes
    nothing, --check changes nothing, an unknown layout is refused naming the known ones, and
    all-disabled gives step 7's 20 back. (A Pod holding a MIG device: after the fix, below -
    the holders come from NVIDIA's runtime applying the CDI spec's hooks.)"""
    try:
        out, _ = mig(lab, "all-1g.5gb")
        node = lab.node()
        labels = node["metadata"]["labels"]
        assert node["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] == "28"
        assert (labels["nvidia.com/mig.config"], labels["nvidia.com/mig.config.state"]) == ("all-1g.5gb", "success")
        assert labels["nvidia.com/gpu.deploy.device-plugin"] == labels["nvidia.com/gpu.deploy.gpu-feature-discovery"] == "true"
        # GPU feature discovery's own labels, written by nfd-master (it lists what it owns)
        assert labels["nvidia.com/mig.strategy"] == "mixed" and labels["nvidia.com/mig-1g.5gb.count"] == "28"
        assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
        assert "nvidia.com/mig-1g.5gb.count" in node["metadata"]["annotations"]["nfd.node.kubernetes.io/feature-labels"]
        assert sh(lab.node_dir / "bin/nvidia-smi", "-L").stdout.count("MIG 1g.5gb") == 28
        log = lab.kubectl("-n", "gpu-operator", "logs", "ds/nvidia-device-plugin-daemonset", "-c", "nvidia-device-plugin").stdout
        assert "Registered device plugin for 'nvidia.com/mig-1g.5gb' with Kubelet" in log
        out, counts = mig(lab, "all-1g.5gb")
        assert counts["changed"] == 0, out.stdout[-3000:]
        # lab_mig_strategy=single: every MIG device is nvidia.com/gpu, and step 7's time-slicing
        # config replicates them (28 x 5); GFD names the product by its MIG profile
        mig(lab, "all-1g.5gb", "-e", "lab_mig_strategy=single")
        node = lab.node()
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "140" and node["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] == "0"
        labels = node["metadata"]["labels"]
        assert labels["nvidia.com/mig.strategy"] == "single" and labels["nvidia.com/gpu.count"] == "28"
        assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED"
        mig(lab, "all-1g.5gb")                                  # back to mixed, the lab's default
        assert lab.node()["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] == "28"
        out, counts = mig(lab, "all-balanced", "--check")
        assert lab.node()["metadata"]["labels"]["nvidia.com/mig.config"] == "all-1g.5gb"
        assert sh(lab.node_dir / "bin/nvidia-smi", "-L").stdout.count("MIG 1g.5gb") == 28
        out, counts = mig(lab, "all-9g.99gb", check=False)
        assert counts["failed"] == 1 and "is not a layout of" in flat(out.stdout) and "all-balanced" in flat(out.stdout)
        mig(lab, "all-balanced")
        allocatable = lab.node()["status"]["allocatable"]
        assert {k: allocatable[k] for k in ("nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb")} == {
            "nvidia.com/mig-1g.5gb": "8", "nvidia.com/mig-2g.10gb": "4", "nvidia.com/mig-3g.20gb": "4"}
        out, counts = mig(lab, "all-disabled")
        node = lab.node()
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "20"      # step 7's time-slicing again
        assert not [k for k in node["metadata"]["labels"] if k.startswith("nvidia.com/mig-") and k.endswith(".count")]
        assert node["metadata"]["labels"]["nvidia.com/mig.config.state"] == "success"
    finally:   # a failure above leaves no layout behind for the tests after it (they count whole GPUs)
        if lab.node()["metadata"]["labels"].get("nvidia.com/mig.config", "all-disabled") != "all-disabled":
            mig(lab, "all-disabled", check=False)


def test_seed_003s_evidence_a_gpu_pod_gets_the_gpu_the_plugin_allocated(lab):
    """After the reboot fix (made here as test_real_node's graded fix makes it) containerd has
    nvidia: NVIDIA's device plugin (over the mock NVML) is registered again, the capability Pod
    lands on lab-node-1 and NVIDIA's runtime (mode cdi) gives it the very GPU the plugin allocated;
    its nvidia-smi lists it; without the runtime the command is missing as with the real image; a
    second Pod gets a GPU after the first ended."""
    fixed(lab)
    def plugin_back():   # the kubelet counts the plugin's devices as allocatable only once it registered
        node = lab.node()
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
        log = (lab.node_dir / "kubelet.log").read_text()
        return ready["status"] == "True" and node["status"]["allocatable"].get("nvidia.com/gpu") == "20" \
            and "Got registration request from device plugin" in log
    lab.wait("the kubelet to post NVIDIA's device plugin's 20 devices again", plugin_back, 180)
    plugin = json.loads(lab.kubectl("-n", "gpu-operator", "get", "pods", "-l", "app=nvidia-device-plugin-daemonset",
                                    "-o", "json").stdout)["items"]
    assert [p["spec"]["nodeName"] for p in plugin] == [NODE]
    # reboot.yml came back only once the plugin registered again (a GPU Pod admitted before that
    # is refused: UnexpectedAdmissionError)
    pod, log = capability_pod(lab, "gpu-capability-check")
    assert pod["status"]["phase"] == "Succeeded" and pod["spec"]["nodeName"] == NODE, (pod["status"], log)
    assert "NVIDIA A100-SXM4-40GB" in log and "40960MiB" in log and "Driver Version: 550.54.15" in log
    devices = allocated(lab, pod["metadata"]["uid"])
    assert len(devices) == 1 and devices[0].startswith("GPU-") and "::" in devices[0]   # one time-sliced replica
    uuid = devices[0].split("::")[0]
    runtime_log = (lab.node_dir / "ov/var/up/log/nvidia-container-runtime.log").read_text()
    assert "nvidia.com/gpu=%s" % uuid in runtime_log            # NVIDIA's runtime injected it through CDI
    # a second Pod, after the first ended: the GPU it gets, by UUID, is the one the plugin gave it
    pod2, log2 = capability_pod(lab, "gpu-capability-list", args='"nvidia-smi -L"')
    assert pod2["status"]["phase"] == "Succeeded", (pod2["status"], log2)
    uuid2 = allocated(lab, pod2["metadata"]["uid"])[0].split("::")[0]
    assert log2.strip().splitlines() == [line for line in log2.strip().splitlines() if uuid2 in line] and len(log2.strip().splitlines()) == 1
    assert re.match(r"GPU 0: NVIDIA A100-SXM4-40GB \(UUID: %s\)$" % re.escape(uuid2), log2.strip())
    # runc alone (no runtimeClassName): the image has no nvidia-smi, as the real CUDA base image
    pod3, log3 = capability_pod(lab, "gpu-capability-runc", runtime="")
    assert pod3["status"]["phase"] == "Failed" and "nvidia-smi: not found" in log3
    assert pod3["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 127
    lab.kubectl("-n", "gpu-lab", "delete", "pod", "gpu-capability-check", "gpu-capability-list", "gpu-capability-runc",
                "--wait=false")


def test_a_mig_pod_sees_exactly_the_mig_device_it_was_given(lab):
    """Issue 40 items 4 and 5, after the fix (containerd has nvidia): on all-1g.5gb a Pod asking
    nvidia.com/mig-1g.5gb: 1 with runtimeClassName nvidia sees exactly the MIG device the plugin
    allocated - NVIDIA's runtime injects it through the node's CDI spec, which mig.yml rewrote;
    while a Pod has a MIG device, the spec's hook marks it held (the mock's holders) and a layout
    change fails naming the Pod; once it is deleted the device is free and all-disabled gives
    step 7's 20 back."""
    mig(lab, "all-1g.5gb")
    spec = (lab.node_dir / "gpu/cdi/nvidia.json").read_text()
    assert spec.count('"name": "MIG-') == 28
    sh(BIN / "kubectl", "--kubeconfig", lab.kubeconfig, "apply", "-f", "-",
       input=(CAPABILITY % {"name": "mig-capability", "args": '"nvidia-smi -L"', "runtime": "runtimeClassName: nvidia"}
              ).replace("nvidia.com/gpu: 1", "nvidia.com/mig-1g.5gb: 1"))
    pod = lab.wait("the MIG capability Pod to end", lambda: (lambda p: p if p["status"].get("phase") in ("Succeeded", "Failed")
                   else None)(json.loads(lab.kubectl("-n", "gpu-lab", "get", "pod", "mig-capability", "-o", "json").stdout)), 120)
    log = lab.kubectl("-n", "gpu-lab", "logs", "mig-capability", check=False).stdout
    assert pod["status"]["phase"] == "Succeeded", (pod["status"], log)
    [device] = allocated(lab, pod["metadata"]["uid"])
    lines = log.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("GPU ") and re.match(r"^  MIG 1g\.5gb +Device +0: \(UUID: %s\)$"
                                                                         % re.escape(device), lines[1]), log
    assert "nvidia.com/gpu=%s" % device in (lab.node_dir / "ov/var/up/log/nvidia-container-runtime.log").read_text()
    held = lab.node_dir / "gpu/mock/nvml-mock-mig.state.held"
    lab.kubectl("-n", "gpu-lab", "delete", "pod", "mig-capability", "--wait=true", timeout=120)
    lab.wait("the runtime's poststop hook to release %s" % device, lambda: not (held / device).exists(), 60)
    # a running Pod holds its device: the layout cannot change under it
    sh(BIN / "kubectl", "--kubeconfig", lab.kubeconfig, "apply", "-f", "-",
       input=MIG_POD.replace("spec:\n", "spec:\n  runtimeClassName: nvidia\n", 1))
    pod = lab.wait("the MIG holder Pod to run", lambda: (lambda p: p if p["status"].get("phase") == "Running" else None)(
        json.loads(lab.kubectl("-n", "gpu-lab", "get", "pod", "mig-holder", "-o", "json").stdout)), 120)
    [device] = allocated(lab, pod["metadata"]["uid"])
    assert (held / device).exists()                          # the createRuntime hook's mark
    out, counts = mig(lab, "all-balanced", check=False)
    assert counts["failed"] == 1 and "gpu-lab/mig-holder (nvidia.com/mig-1g.5gb: 1)" in flat(out.stdout)
    assert "In use by another client" in flat(out.stdout) or "all orderings failed" in flat(out.stdout)
    lab.kubectl("-n", "gpu-lab", "delete", "pod", "mig-holder", "--wait=true", timeout=120)
    lab.wait("the runtime's poststop hook to release %s" % device, lambda: not (held / device).exists(), 60)
    mig(lab, "all-disabled")
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "20"


# (drill, its layer, lab-node-1's allocatable with it, words of a real component in the layer's
# evidence, an answer's evidence)
REAL_DRILLS = [
    ("plugin-no-mount", "device-plugin", "0", "failed to create FS watcher for /var/lib/kubelet/device-plugins/",
     "the device plugin pod on lab-node-1 crash-loops: no socket folder mounted"),
    ("plugin-evicted", "device-plugin", "0", "no device-plugin Pod on lab-node-1",
     "the device plugin daemonset has no pod on lab-node-1 (desired 0)"),
    ("kernel-update", "driver", "0", "Failed to initialize NVML: Driver/library version mismatch",
     "nvidia-smi on lab-node-1 fails: driver version mismatch"),
    ("xid", "node-advertisement", "19", "XidCriticalError: Xid=79 on Device=GPU-",
     "capacity 20 but allocatable 19 on lab-node-1 - the plugin marked a GPU unhealthy"),
    # issue 40 item 7: all-balanced under MIG_STRATEGY=single (the plugin v0.19.3's words), and
    # all-disabled asked while gpu-lab/mig-drill-holder holds a MIG device (mig-parted fails)
    ("mig-strategy-mismatch", "device-plugin", "0", "more than one MIG device type present on node",
     "the device plugin's log: invalid MIG configuration under MIG_STRATEGY=single"),
    ("mig-layout-busy", "node-advertisement", "0", "nvidia.com/mig.config=all-disabled nvidia.com/mig.config.state=failed",
     "node labels say nvidia.com/mig.config.state=failed, no nvidia.com/gpu allocatable"),
]


def test_drills_break_nvidia_s_own_components(lab):
    """After the fix (containerd holds nvidia), the drills NVIDIA's components can show break
    them on lab-node-1: the kubelet posts what the plugin reports, gpu_diagnose names the layer
    quoting the component, the grader passes a right answer; from one drill to the next through
    the healthy path; reset brings every GPU back; runtime-not-loaded now stays on the stand-ins
    (and mends the last MIG drill on the way: holder gone, all-disabled, strategy mixed)."""
    assert lab.running() == ["nvidia", "runc"]
    for name, layer, allocatable, words, answer in REAL_DRILLS:
        out, counts, state = drill(lab, name)
        assert (state["node"], state["real"], state["layer"]) == (NODE, True, layer), (name, state)
        node = lab.node()["status"]
        assert node["allocatable"]["nvidia.com/gpu"] == allocatable, (name, node["allocatable"])
        if not name.startswith("mig-"):     # a MIG layout's plugin registers other resources
            assert node["capacity"]["nvidia.com/gpu"] == "20", (name, node["capacity"])
        pod = json.loads(lab.kubectl("-n", "gpu-drill", "get", "pod", "cuda-drill", "-o", "json").stdout)
        scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"][0]
        assert scheduled["status"] == "False" and pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": NODE}
        first, layers = diagnosed(lab)
        assert first == layer, (name, first, layers[first]["next"] if first else None)
        assert words in json.dumps(layers[layer]) , (name, layers[layer])
        ok, text = graded(lab, name, layer, answer)
        assert ok, text
        if name == "plugin-no-mount":
            out, counts, _ = drill(lab, name)
            assert counts["changed"] == 0, out.stdout[-3000:]
            out, counts, _ = drill(lab, "plugin-evicted", "--check")
            assert counts["changed"] > 0 and json.loads((lab.state / "drill.json").read_text())["drill"] == name
    assert "nvidia.com/gpu.deploy.device-plugin" in lab.node()["metadata"]["labels"]
    out, _, state = drill(lab, "runtime-not-loaded")
    assert (state["node"], state["real"]) == ("lab-node-0", False)
    assert "unloading it would undo your fix" in flat(out.stdout)
    assert lab.node()["status"]["allocatable"]["nvidia.com/gpu"] == "20"    # the MIG drill mended on the way
    assert lab.node()["metadata"]["labels"]["nvidia.com/mig.config.state"] == "success"
    out, _, state = drill(lab, "reset")
    node = lab.node()["status"]
    assert node["allocatable"]["nvidia.com/gpu"] == "20" and state["drill"] == ""
    out, counts, _ = drill(lab, "reset")
    assert counts["changed"] == 0, out.stdout[-3000:]
