"""NVIDIA's nvidia-mig-parted v0.12.1, unmodified (toolchain/build.sh nvidia-mig-parted), over the
mock NVML library: the GPU Operator's default layouts applied and asserted for real.

Each run is in a private mount namespace where nvml_mock/gpu_view.sh puts the mock's GPUs in
/sys/bus/pci/devices and an nvidia line in /proc/modules - the pieces mig-parted reads (go-nvlib
v0.7.1 pkg/nvpci; cmd/nvidia-mig-parted/util/nvml.go) - and the mock's nvidia-smi on PATH (its
`-r` resets the GPUs when a MIG mode change is pending, util/device.go:153). The binary is built
on demand when missing (about 15 s with the module cache warm); the tests skip, saying why, only
when it cannot be built here or there is no root for the namespace.
"""
import os
import pathlib
import re
import subprocess

import pytest

from nvml_mock_testing import CONFIG, ROOT, mig_devices  # noqa: F401


@pytest.fixture
def node(parted_view):
    """Commands in a mount namespace of their own holding the mock's GPU view (nvml_mock_testing)."""
    return parted_view


def test_the_config_is_mig_parteds_own(mig_parted):
    """toolchain/mig-parted/config-default.yaml is github.com/NVIDIA/mig-parted@v0.12.1's
    deployments/systemd/config-default.yaml, as the module cache holds it (the GPU Operator's
    v25.3.0 module is refused by the proxy)."""
    cache = subprocess.run(["go", "env", "GOMODCACHE"], stdout=subprocess.PIPE, universal_newlines=True,
                           check=True).stdout.strip()
    source = pathlib.Path(cache) / "github.com/!n!v!i!d!i!a/mig-parted@v0.12.1/deployments/systemd/config-default.yaml"
    assert source.read_bytes() == CONFIG.read_bytes()


def test_the_view_shows_the_mocks_gpus(node):
    rc, out = node("sh", "-c", "cat /sys/bus/pci/devices/0000:07:00.0/device /sys/bus/pci/devices/*/vendor; "
                   "grep '^nvidia ' /proc/modules; ls /sys/bus/pci/devices")
    assert out.split() == ["0x20b0"] + ["0x10de"] * 4 + ["nvidia", "56823808", "0", "-", "Live",
                                                         "0x0000000000000000", "(POE)",
                                                         "0000:07:00.0", "0000:0f:00.0", "0000:47:00.0",
                                                         "0000:4e:00.0"]


def test_mig_parted_applies_the_gpu_operators_layouts(node, mig_parted):
    rc, out = node(mig_parted, "assert", "-f", CONFIG, "-c", "all-balanced", check=False)
    assert rc != 0 and "not currently applied" in out
    rc, out = node(mig_parted, "apply", "-f", CONFIG, "-c", "all-balanced")
    assert "MIG configuration applied successfully" in out
    # the mode change was pending until mig-parted's `nvidia-smi -r`
    assert re.findall(r"current (\d) pending (\d)", node.state.read_text()) == [("1", "1")] * 4
    node(mig_parted, "assert", "-f", CONFIG, "-c", "all-balanced")
    rc, out = node("nvidia-smi", "-L")
    assert mig_devices(out) == {g: ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"] for g in range(4)}, out

    rc, out = node(mig_parted, "apply", "-f", CONFIG, "-c", "all-1g.5gb")
    node(mig_parted, "assert", "-f", CONFIG, "-c", "all-1g.5gb")
    rc, out = node("nvidia-smi", "-L")
    assert mig_devices(out) == {g: ["1g.5gb"] * 7 for g in range(4)}, out   # mig-1g.5gb: 28

    node(mig_parted, "apply", "-f", CONFIG, "-c", "all-disabled")
    node(mig_parted, "assert", "-f", CONFIG, "-c", "all-disabled")
    rc, out = node("nvidia-smi", "-L")
    assert mig_devices(out) == {g: [] for g in range(4)}, out
    assert re.findall(r"current (\d) pending (\d)", node.state.read_text()) == [("0", "0")] * 4


def test_mig_parted_cannot_reconfigure_a_gpu_a_container_holds(node, mig_parted):
    node(mig_parted, "apply", "-f", CONFIG, "-c", "all-7g.40gb")
    rc, out = node("nvidia-smi", "-L")
    uuid = re.search(r"MIG 7g\.40gb +Device +0: \(UUID: (MIG-[0-9a-f-]+)\)", out).group(1)
    held = pathlib.Path(str(node.state) + ".held")
    held.mkdir()
    (held / uuid).write_text("")
    rc, out = node(mig_parted, "apply", "-f", CONFIG, "-c", "all-3g.20gb", check=False)
    # go-nvml names the return code: "error destroying Compute instance ...: ERROR_IN_USE"
    assert rc != 0 and re.search(r"error destroying Compute instance .*: ERROR_IN_USE", out), out
    node(mig_parted, "assert", "-f", CONFIG, "-c", "all-7g.40gb")       # nothing was destroyed
