"""gpu_node_facts against a real containerd daemon (1.6.20) asked by a real crictl.

The incident, reproduced: the daemon starts with runc only, the NVIDIA drop-in is written, the
daemon is not restarted. `containerd config dump` (a new process) lists what the files say;
`crictl info` lists what the daemon holds - the node facts must keep them apart.
nvidia-smi and systemctl cannot run here (no GPU, no systemd): small stand-ins print the
words the real ones print (tests/diagnosis_corpus/real/SOURCE.md).
"""
import os
import shutil
import stat
import subprocess
from lab_testing import TESTS  # tests/lab_testing.py

import pytest

import gpu_node_facts

CORPUS = TESTS / "diagnosis_corpus"


def _fake(path, script):
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_running_config_against_the_files(module_runner, containerd_oracle, crictl, daemon, tmp_path):
    d, endpoint, _proc = daemon
    args = {"crictl": crictl, "runtime_endpoint": endpoint, "containerd": containerd_oracle,
            "containerd_config": str(d / "config.toml"), "nvidia_smi": "/nonexistent/nvidia-smi",
            "driver_root": str(tmp_path / "no-driver"), "containerd_log": str(d / "containerd.log"),
            "kernel_log": str(CORPUS / "real/dmesg-xid79.txt"), "socket_dir": str(tmp_path / "none")}
    out = module_runner(gpu_node_facts.main, args)
    facts = out["node_facts"]
    assert facts["runtimes_running"] == ["runc"] and facts["runtimes_configured"] == ["runc"]
    assert facts["restart_pending"] is False and facts["default_runtime"] == "runc"
    assert facts["cdi_enabled"] is False                      # 1.6: no CDI in the running config
    assert "driver_ok" not in facts                            # not installed: unknown, not broken
    assert facts["kernel_xid"] == ["NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"]
    assert "crictl-info.json" in out["artefacts"] and "device_plugin_sockets" not in facts
    # the drop-in is written, containerd is not restarted: the incident
    (d / "conf.d/99-nvidia.toml").write_text((CORPUS / "containerd-1.6.20/99-nvidia.toml").read_text())
    facts = module_runner(gpu_node_facts.main, args)["node_facts"]
    assert facts["runtimes_running"] == facts["runtimes_loaded"] == ["runc"]
    assert facts["runtimes_configured"] == ["nvidia"] and facts["restart_pending"] is True
    # the daemon is gone: crictl's own error, and no runtimes claimed
    _proc.terminate()
    _proc.wait(timeout=20)
    facts = module_runner(gpu_node_facts.main, args)["node_facts"]
    assert facts["cri_error"] and "runtimes_running" not in facts and "restart_pending" not in facts


def test_driver_root_chroot_failures_sockets_and_fabric_manager(module_runner, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("chroot needs root")
    # a driver root like the GPU Operator's: nvidia-smi under it, run by a real chroot
    droot = tmp_path / "driver"
    (droot / "usr/bin").mkdir(parents=True)
    sh = shutil.which("sh")
    libs = subprocess.run(["ldd", os.path.realpath(sh)], capture_output=True, text=True).stdout
    (droot / "bin").mkdir()
    shutil.copy(os.path.realpath(sh), droot / "bin/sh")
    for token in libs.split():
        if token.startswith("/") and os.path.exists(token):
            target = droot / token.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(token, target)
    _fake(droot / "usr/bin/nvidia-smi", 'case "$1" in --query-gpu=*) '
          'echo "0, NVIDIA H100 80GB HBM3, GPU-a1, 550.54.15, 81559 MiB";; mig) exit 6;; '
          '*) echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |";; esac\n')
    sockets = tmp_path / "device-plugins"
    sockets.mkdir()
    for name in ("kubelet.sock", "nvidia-gpu.sock", "nvidia-mig-1g.10gb.sock"):
        (sockets / name).write_text("")
    systemctl = _fake(tmp_path / "systemctl", "echo LoadState=loaded; echo ActiveState=failed\n")
    base = {"nvidia_smi": "nvidia-smi-not-on-path", "driver_root": str(droot), "crictl": "/nonexistent/crictl",
            "containerd": "/nonexistent/containerd", "journalctl": "/nonexistent/journalctl",
            "kernel_log": str(tmp_path / "none"), "socket_dir": str(sockets), "systemctl": systemctl,
            "fabric_manager": "always", "resource": ["nvidia.com/gpu"]}
    out = module_runner(gpu_node_facts.main, base)
    facts = out["node_facts"]
    assert facts["nvidia_smi"] == "chroot %s nvidia-smi" % droot
    assert facts["driver_ok"] is True and facts["gpus"][0]["memory_total_mib"] == 81559
    assert facts["fabric_manager"] == "failed"
    assert facts["device_plugin_sockets"] == ["nvidia-gpu.sock"]      # only nvidia-<resource>.sock
    assert "mig_lgip" not in facts and "runtimes_running" not in facts
    # nvidia-smi runs and fails: broken with its own words (not "not installed")
    _fake(droot / "usr/bin/nvidia-smi", "echo 'Failed to initialize NVML: Driver/library version mismatch'\n"
          "exit 18\n")
    facts = module_runner(gpu_node_facts.main, dict(base, fabric_manager="never"))["node_facts"]
    assert facts["driver_ok"] is False and "version mismatch" in facts["driver_error"]
    assert "fabric_manager" not in facts
    # an output no parser reads is reported in checks and left out, never guessed
    _fake(droot / "usr/bin/nvidia-smi", "echo 'GPU 0: H100 (UUID: GPU-a1)'\n")
    out = module_runner(gpu_node_facts.main, dict(base, fabric_manager="never"))
    assert not out["failed"] and "driver_ok" not in out["node_facts"]
    assert any("noheader" in str(c["output"]) for c in out["checks"])
