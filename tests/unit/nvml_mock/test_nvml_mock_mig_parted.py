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


def test_another_cards_layout_applies_as_nothing_on_an_h100(node, mig_parted):
    """What NVIDIA's code does with a layout that is not the card's, here 4 x H100-SXM5-80GB
    (docs/gpu-stack.md "A layout of another card"). mig-parted picks a config entry by the PCI
    device ID in sysfs (api/spec/v1/helpers.go:24 MatchesDeviceFilter) and turns profile names into
    NVML profiles through the names the GPUs' profiles have (go-nvlib v0.7.1 ParseMigProfile):
    - all-1g.5gb (no device-filter, A100-40GB's profile): MigConfig.Flatten drops the whole layout
      when a name is none of the GPU's (pkg/types/mig_config.go:104-106), an empty layout is
      "applied" (pkg/mig/config/config.go:268-274, 293): MIG on, no instance, exit 0, "MIG
      configuration applied successfully"; `assert` then fails. NVIDIA/mig-parted#18 is the
      same on a real A100-80GB with all-2g.10gb.
    - all-1g.24gb (every entry filtered to other cards: H100 NVL, GH200): no entry matches, so
      nothing is walked (cmd/nvidia-mig-parted/assert/assert.go:227-234) - exit 0, nothing changed.
    The mock's share: the card's real PCI device ID in sysfs (0x2330, what the H100 entries of the
    config name), and only the card's profiles from GetGpuInstanceProfileInfo (1g.10gb, not 1g.5gb)."""
    node.configure("H100-SXM5-80GB")
    rc, out = node("sh", "-c", "cat /sys/bus/pci/devices/*/device")
    assert out.split() == ["0x2330"] * 4
    rc, out = node(mig_parted, "apply", "-f", CONFIG, "-c", "all-1g.5gb")
    assert "MIG configuration applied successfully" in out
    state = node.state.read_text()
    assert re.findall(r"current (\d) pending (\d)", state) == [("1", "1")] * 4      # MIG on ...
    assert not re.search(r"^(gi|ci) ", state, re.M), state                          # ... nothing in it
    rc, out = node("nvidia-smi", "-L")
    assert mig_devices(out) == {g: [] for g in range(4)}, out
    rc, out = node(mig_parted, "assert", "-f", CONFIG, "-c", "all-1g.5gb", check=False)
    assert rc != 0 and "not currently applied" in out

    # the card's own 1g layout on the same GPUs: the H100 entry of all-1g.10gb (0x233010DE), 7 each
    node(mig_parted, "apply", "-f", CONFIG, "-c", "all-1g.10gb")
    node(mig_parted, "assert", "-f", CONFIG, "-c", "all-1g.10gb")
    rc, out = node("nvidia-smi", "-L")
    assert mig_devices(out) == {g: ["1g.10gb"] * 7 for g in range(4)}, out

    rc, out = node(mig_parted, "apply", "-f", CONFIG, "-c", "all-1g.24gb")
    assert "MIG configuration applied successfully" in out
    rc, out = node("nvidia-smi", "-L")
    assert mig_devices(out) == {g: ["1g.10gb"] * 7 for g in range(4)}, out     # untouched
    rc, out = node(mig_parted, "assert", "-f", CONFIG, "-c", "all-1g.24gb", check=False)
    assert rc != 0 and "not currently applied" in out
