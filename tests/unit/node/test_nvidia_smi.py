"""Finding and judging nvidia-smi (module_utils/node/nvidia_smi.py; the module gpu_driver_version:
tests/unit/library/test_gpu_driver_version.py).

The failure texts and exit codes are nvidia-smi's own: "NVIDIA-SMI has failed because it
couldn't communicate with the NVIDIA driver" (exit 9, NVIDIA/gpu-operator and
k8s-device-plugin issue threads), "Failed to initialize NVML: Driver/library version mismatch"
(exit 18 on 5xx drivers), exit codes from nvidia-smi(1) RETURN VALUE. A real chroot into a
driver root built here stands for the GPU Operator's /run/nvidia/driver.
"""
import shutil

import pytest

from ansible.module_utils.node import nvidia_smi as ns


def fake(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_a_working_driver_is_ok_with_its_full_version(tmp_path):
    smi = fake(tmp_path / "nvidia-smi", "echo 550.54.15\necho 550.54.15\n")
    out = ns.driver_version(smi)
    assert out["status"] == "ok" and out["version"] == "550.54.15"
    assert out["command"].startswith(smi + " --query-gpu=driver_version")
    assert "2 GPU(s)" in out["reason"]


@pytest.mark.parametrize("body,words", [
    ("echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
     "that the latest NVIDIA driver is installed and running.\"\nexit 9\n", "couldn't communicate"),
    ("echo 'Failed to initialize NVML: Driver/library version mismatch'\necho 'NVML library version: 550.90'\nexit 18\n",
     "Driver/library version mismatch"),
    ("echo 'Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error' >&2\nexit 15\n",
     "Unable to determine the device handle"),
    ("exit 0\n", "printed no driver version"),
    ("echo 550.54.15\necho 535.104.05\n", "more than one driver version"),
])
def test_a_broken_driver_fails_with_its_own_words(tmp_path, body, words):
    out = ns.driver_version(fake(tmp_path / "nvidia-smi", body))
    assert out["status"] == "failed" and "version" not in out
    assert words in out["reason"] or words in out["output"], out


@pytest.mark.parametrize("rc,words", [(4, "no permission"), (2, "does not know the query")])
def test_runs_that_say_nothing_about_the_driver_are_inconclusive(tmp_path, rc, words):
    out = ns.driver_version(fake(tmp_path / "nvidia-smi", "echo 'Insufficient Permissions'\nexit %d\n" % rc))
    assert out["status"] == "inconclusive" and words in out["reason"]


def test_not_installed_is_missing_never_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    out = ns.driver_version("nvidia-smi", str(tmp_path / "no-driver-root"))
    assert out["status"] == "missing" and out["command"] is None
    assert "not on PATH" in out["reason"] and "driver root" in out["reason"]
    assert ns.driver_version(str(tmp_path / "nvidia-smi"))["status"] == "missing"


def test_found_under_the_driver_root_is_run_by_chroot(tmp_path, monkeypatch):
    root = tmp_path / "driver"
    fake(root / "usr/bin/nvidia-smi", "echo 550.54.15\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty") + ":/usr/sbin:/usr/bin:/sbin:/bin")
    typed, resolved = ns.locate("nvidia-smi", str(root))
    assert typed == ["chroot", str(root), "nvidia-smi"]
    assert resolved == [shutil.which("chroot"), str(root), "nvidia-smi"]
