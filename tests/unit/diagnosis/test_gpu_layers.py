"""The diagnosis helpers and gpu_node_facts (with real containerd); gpu_preflight: tests/unit/library/test_gpu_preflight.py."""
import stat
import subprocess

import pytest

import gpu_node_facts
from ansible.module_utils.diagnosis import diagnose as gdiag
from ansible.module_utils.diagnosis import layers as gl

LAB_MAIN = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
      BinaryName = "/usr/bin/nvidia-container-runtime"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia-cdi"]
    runtime_type = "io.containerd.runc.v2"
"""


def test_runtimes_from_real_dumps(containerd_oracle, containerd2_oracle, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(LAB_MAIN)
    for binary in (containerd_oracle, containerd2_oracle):
        dump = subprocess.run([binary, "--config", str(config), "config", "dump"],
                              capture_output=True, text=True, check=True).stdout
        names = gl.runtimes_from_dump(dump)
        assert "nvidia" in names and "nvidia-cdi" in names and "runc" in names, (binary, names)
        assert "options" not in names and not any(n.startswith("nvidia.") for n in names)
    config.write_text(LAB_MAIN.split('  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]')[0])
    dump = subprocess.run([containerd_oracle, "--config", str(config), "config", "dump"],
                          capture_output=True, text=True, check=True).stdout
    assert "nvidia" not in gl.runtimes_from_dump(dump)


def test_selector_and_affinity():
    match = gl.parse_selector("name=nvidia-device-plugin-ds,tier!=x,app in (a, b),present,!gone")
    assert match({"name": "nvidia-device-plugin-ds", "app": "a", "present": ""})
    assert not match({"name": "nvidia-device-plugin-ds", "app": "c", "present": ""})
    assert not match({"name": "nvidia-device-plugin-ds", "app": "a", "present": "", "gone": "1"})
    with pytest.raises(gl.DiagnoseError, match="label selector"):
        gl.parse_selector("a=b,(((")
    node = {"metadata": {"name": "n1", "labels": {"gpu": "yes", "cc": "8"}}}
    pod = {"spec": {"nodeSelector": {"gpu": "yes"}, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "cc", "operator": "Gt", "values": ["7"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}]}}}}}
    assert gl.node_admits(pod, node)
    node["metadata"]["labels"]["cc"] = "7"
    assert not gl.node_admits(pod, node) and gl.node_admits(pod, node, use_affinity=False)
    node["metadata"]["name"] = "n9"
    assert gl.node_admits(pod, node)


def test_request_and_scheduler_messages():
    pod = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}},
                                   {"resources": {"requests": {"nvidia.com/gpu": 1}}}],
                    "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": 4}}}]}}
    assert gl.pod_request(pod, "nvidia.com/gpu") == 4
    found = gl.scheduler_findings(
        "0/3 nodes are available: 1 node(s) had untolerated taint(s) {nvidia.com/gpu: present}, "
        "2 Insufficient nvidia.com/gpu. preemption: ...", "nvidia.com/gpu")
    assert any("untolerated taint" in f for f in found) and any("Insufficient" in f for f in found)


def test_node_facts_are_validated():
    assert gdiag.check_facts({"n": {"driver_ok": True, "runtimes_loaded": ["runc"]}}) is None
    assert "must be a boolean" in gdiag.check_facts({"n": {"driver_ok": "yes"}})
    assert "unknown key" in gdiag.check_facts({"n": {"driver": True}})
    assert "must be a mapping" in gdiag.check_facts({"n": ["runc"]})
    assert "strings" in gdiag.check_facts({"n": {"runtimes_loaded": [1]}})


def _fake(path, script):
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_gpu_node_facts_with_real_containerd(module_runner, containerd_oracle, tmp_path):
    # the stand-in for nvidia-smi prints what the contract's --query-gpu CSV query prints
    config = tmp_path / "config.toml"
    config.write_text(LAB_MAIN)
    smi = _fake(tmp_path / "nvidia-smi", 'case "$1" in --query-gpu=*) echo "0, NVIDIA H100 80GB HBM3, '
                'GPU-1, 550.54.15, 81559 MiB"; echo "1, NVIDIA H100 80GB HBM3, GPU-2, 550.54.15, 81559 MiB";; '
                '*) exit 6;; esac\n')
    sockets = tmp_path / "device-plugins"
    sockets.mkdir()
    (sockets / "kubelet.sock").write_text("")
    out = module_runner(gpu_node_facts.main, {"nvidia_smi": smi, "containerd": containerd_oracle,
                                              "containerd_config": str(config),
                                              "socket_dir": str(sockets), "crictl": "/nonexistent/crictl",
                                              "journalctl": "/nonexistent/journalctl",
                                              "kernel_log": str(tmp_path / "none.log")})
    facts = out["node_facts"]
    assert sorted(facts.pop("runtimes_configured")) == ["nvidia", "nvidia-cdi", "runc"]
    assert [g["uuid"] for g in facts.pop("gpus")] == ["GPU-1", "GPU-2"]
    assert facts == {"driver_ok": True, "driver_version": "550.54.15", "nvidia_smi": smi,
                     "default_runtime": "runc", "default_runtime_configured": "runc",
                     "device_plugin_socket": False, "device_plugin_sockets": []}
    (sockets / "nvidia-gpu.sock").write_text("")
    broken = _fake(tmp_path / "smi-broken", "echo 'NVIDIA-SMI has failed because it could not "
                   "communicate with the NVIDIA driver' >&2\nexit 9\n")
    out = module_runner(gpu_node_facts.main, {"nvidia_smi": broken, "containerd": "/nonexistent/containerd",
                                              "crictl": "/nonexistent/crictl", "socket_dir": str(sockets),
                                              "journalctl": "/nonexistent/journalctl",
                                              "kernel_log": str(tmp_path / "none.log")})
    assert out["node_facts"] == {"driver_ok": False, "nvidia_smi": broken,
                                 "driver_error": "NVIDIA-SMI has failed because it could not "
                                 "communicate with the NVIDIA driver",
                                 "device_plugin_socket": True, "device_plugin_sockets": ["nvidia-gpu.sock"]}
    assert any(c["output"] == "not found" for c in out["checks"])
