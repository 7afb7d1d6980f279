"""gpu_driver_version: the module's main() - nvidia-smi found on PATH or under a driver root (a real
chroot), its verdict (ok, failed, inconclusive, missing) with nvidia-smi's own words, never a change.
How nvidia-smi's texts and exit codes are judged: tests/unit/node/test_nvidia_smi.py."""
import os
import shutil
import subprocess

import pytest

import gpu_driver_version


def fake(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("body,status,version,words", [
    ("echo 550.54.15\necho 550.54.15\n", "ok", "550.54.15", "550.54.15"),
    ("echo 'Failed to initialize NVML: Driver/library version mismatch'\nexit 18\n", "failed", None,
     "version mismatch"),
    ("echo 'Insufficient Permissions'\nexit 4\n", "inconclusive", None, "Insufficient Permissions"),
])
def test_the_verdict_and_its_words_from_the_path(module_runner, tmp_path, body, status, version, words):
    smi = fake(tmp_path / "bin/nvidia-smi", body)
    out = module_runner(gpu_driver_version.main, {"nvidia_smi": smi, "driver_root": ""})
    assert not out["failed"] and out["changed"] is False, out.get("msg")
    assert out["status"] == status and out.get("version") == version and words in out["output"]
    assert out["command"].startswith(smi + " --query-gpu=driver_version")


def test_not_installed_is_missing_in_check_mode_too(module_runner, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    out = module_runner(gpu_driver_version.main, {"nvidia_smi": "nvidia-smi-%d" % os.getpid(),
                                                  "driver_root": str(tmp_path / "no-root")}, check_mode=True)
    assert not out["failed"] and out["status"] == "missing" and out["command"] is None and not out["changed"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("chroot"), reason="chroot needs root")
def test_a_real_chroot_into_a_driver_root(tmp_path, monkeypatch, module_runner):
    """A driver root with its own /bin/sh (dash and the libraries ldd names), as the
    Operator's driver container gives /run/nvidia/driver its own userland."""
    root = tmp_path / "run-nvidia-driver"
    shell = os.path.realpath(shutil.which("dash") or "/bin/sh")
    libs = [line.split("=>")[-1].split("(")[0].strip() for line in
            subprocess.run(["ldd", shell], capture_output=True, text=True).stdout.splitlines()]
    for lib in [l for l in libs if l.startswith("/")]:
        dest = root / lib.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(lib, dest)
    (root / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(shell, root / "bin/sh")
    name = "nvidia-smi-test-%d" % os.getpid()         # on no PATH of this machine
    fake(root / "usr/bin" / name, "echo 550.54.15\n")
    out = module_runner(gpu_driver_version.main, {"nvidia_smi": name, "driver_root": str(root)})
    assert out["status"] == "ok" and out["version"] == "550.54.15", out
    assert out["command"].split()[:3] == [shutil.which("chroot"), str(root), name]
    fake(root / "usr/bin" / name, "echo 'Failed to initialize NVML: Driver/library version mismatch'\nexit 18\n")
    out = module_runner(gpu_driver_version.main, {"nvidia_smi": name, "driver_root": str(root)}, check_mode=True)
    assert out["status"] == "failed" and "version mismatch" in out["output"] and not out["changed"]
    os.unlink(root / "bin/sh")                        # the command cannot run in the root: exit 127
    out = module_runner(gpu_driver_version.main, {"nvidia_smi": name, "driver_root": str(root)})
    assert out["status"] == "inconclusive", out
