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

from test_nvml_mock_mig import LIBDIR, ROOT, built, go_nvml_dir  # noqa: F401  (the mock's build)

CONFIG = ROOT / "toolchain/mig-parted/config-default.yaml"
GPU_VIEW = ROOT / "nvml_mock/gpu_view.sh"


def bin_dir():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(os.environ.get("GPU_STACK_BIN_DIR") or os.path.join(cache, "gpu-incident-lab/bin"))


@pytest.fixture(scope="module")
def mig_parted():
    """nvidia-mig-parted v0.12.1, built by toolchain/build.sh when missing."""
    if os.geteuid() != 0:
        pytest.skip("needs root: mig-parted runs in a private mount namespace (unshare --mount)")
    path = bin_dir() / "nvidia-mig-parted"
    if not os.access(str(path), os.X_OK):
        done = subprocess.run([str(ROOT / "toolchain/build.sh"), "nvidia-mig-parted", str(bin_dir())],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=900, check=False)
        if done.returncode != 0:
            pytest.skip("nvidia-mig-parted cannot be built here (toolchain/build.sh nvidia-mig-parted %s): %s"
                        % (bin_dir(), done.stdout.strip().splitlines()[-3:]))
    return path


@pytest.fixture
def node(built, mig_parted, tmp_path):  # noqa: F811
    """Run commands in a mount namespace of their own holding the mock's GPU view."""
    conf = tmp_path / "nvml-mock.conf"
    conf.write_text("card = A100-SXM4-40GB\ncount = 4\nmig_state = %s\n" % (tmp_path / "mig.state"))
    env = {"NVML_MOCK_CONFIG": str(conf), "LD_LIBRARY_PATH": str(built / "root" / LIBDIR),
           "PATH": "%s:/usr/bin:/bin:/usr/sbin:/sbin" % (built / "root/usr/bin")}

    def run(*args, check=True):
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c",
                               'bash "$0" "$1" >/dev/null && shift && exec "$@"', str(GPU_VIEW),
                               str(tmp_path / "view")] + [str(a) for a in args], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=60, check=False)
        assert not check or done.returncode == 0, done.stdout
        return done.returncode, done.stdout
    run.state = tmp_path / "mig.state"
    return run


def mig_devices(out):
    """{GPU index: [profile, ...]} from nvidia-smi -L."""
    found, gpu = {}, None
    for line in out.splitlines():
        m = re.match(r"^GPU (\d+): ", line)
        if m:
            gpu = int(m.group(1))
            found[gpu] = []
        m = re.match(r"^  MIG (\S+) +Device +\d+: \(UUID: MIG-", line)
        if m:
            found[gpu].append(m.group(1))
    return found


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
