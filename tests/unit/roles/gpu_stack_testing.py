"""What the GPU stack's tests share (tests/unit/roles/test_gpu_stack*.py): where the mock NVML
library's sources and NVIDIA's built binaries are, the mock built once into a driver root (the
fixtures mock_build and driver_root, registered by tests/unit/roles/conftest.py), and running its
nvidia-smi reader."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import versions
from lab_testing import ROOT

MOCK_SRC = ROOT / "nvml_mock"
FILES = ROOT / "roles/gpu_stack/files"
TOOLCHAIN = ROOT / "toolchain"
LIBDIR = "usr/lib/x86_64-linux-gnu"
UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
DEFAULT_COMPONENTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd",
                      "kwok", "kwokctl", "kubelet", "crictl"]
# toolchain/build.sh's gpu-stack, in its order: NVIDIA's (cgo) and nfd-master (CGO off)
GPU_COMPONENTS = ["nvidia-device-plugin", "config-manager", "gpu-feature-discovery", "nvidia-container-runtime",
                  "nvidia-ctk", "nvidia-mig-parted", "nfd-master"]
# NVIDIA's releases built here: their one pin is the go.mod of their toolchain folder
PLUGIN = ("github.com/NVIDIA/k8s-device-plugin",
          "v" + versions.go_mod_version("nvidia-device-plugin", "github.com/NVIDIA/k8s-device-plugin"))
TOOLKIT = ("github.com/NVIDIA/nvidia-container-toolkit",
           "v" + versions.go_mod_version("nvidia-container-toolkit", "github.com/NVIDIA/nvidia-container-toolkit"))
MIG_PARTED = ("github.com/NVIDIA/mig-parted", "v" + versions.go_mod_version("mig-parted", "github.com/NVIDIA/mig-parted"))
NFD = ("sigs.k8s.io/node-feature-discovery",
       "v" + versions.go_mod_version("node-feature-discovery", "sigs.k8s.io/node-feature-discovery"))
MODULES = {"nvidia-device-plugin": PLUGIN, "config-manager": PLUGIN, "gpu-feature-discovery": PLUGIN,
           "nvidia-container-runtime": TOOLKIT, "nvidia-ctk": TOOLKIT, "nvidia-mig-parted": MIG_PARTED,
           "nfd-master": NFD}

sys.path.insert(0, str(MOCK_SRC))
sys.path.insert(0, str(FILES))
import gen_cards  # noqa: E402
import gen_stubs  # noqa: E402
import gpu_cdi_spec  # noqa: E402


def bin_dir():
    """Where toolchain/build.sh put NVIDIA's binaries (the control plane's cache folder)."""
    if os.environ.get("GPU_STACK_BIN_DIR"):
        return pathlib.Path(os.environ["GPU_STACK_BIN_DIR"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(cache) / "gpu-incident-lab/bin"


def nvidia_binary(name):
    """Path of one of NVIDIA's built binaries, or skip saying how to build it."""
    path = bin_dir() / name
    if not os.access(str(path), os.X_OK):
        pytest.skip("%s is not built: toolchain/build.sh %s %s" % (name, name, bin_dir()))
    return path


def go_nvml_dir():
    """go-nvml's pkg/nvml in the module cache, the version toolchain/nvidia-device-plugin pins."""
    if not shutil.which("go"):
        pytest.skip("no go on PATH: go-nvml's source (the mock's nvml.h) comes from Go's module cache")
    mod = (TOOLCHAIN / "nvidia-device-plugin/go.mod").read_text()
    version = re.search(r"^\s*github\.com/NVIDIA/go-nvml (\S+)", mod, re.M).group(1)
    done = subprocess.run(["go", "mod", "download", "-json", "github.com/NVIDIA/go-nvml@" + version],
                          cwd=str(TOOLCHAIN / "nvidia-device-plugin"), stdout=subprocess.PIPE,
                          universal_newlines=True, check=True)
    return pathlib.Path(json.loads(done.stdout)["Dir"]) / "pkg/nvml"


@pytest.fixture(scope="session")
def mock_build(tmp_path_factory):
    """A driver root with the mock built by nvml_mock/build.sh (shared; copy it to change it)."""
    if not shutil.which("gcc"):
        pytest.skip("no gcc: the mock NVML library is C")
    root = tmp_path_factory.mktemp("mock") / "driver-root"
    env = dict(os.environ, GO_NVML_DIR=str(go_nvml_dir()))
    subprocess.run([str(MOCK_SRC / "build.sh"), "--driver-root", str(root)], env=env, check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return root


@pytest.fixture
def driver_root(mock_build, tmp_path):
    """A driver root of this test's own: its nvml-mock.conf can be written freely."""
    root = tmp_path / "driver-root"
    shutil.copytree(str(mock_build), str(root), symlinks=True)
    return root


def mock_conf(root, text):
    """Write the mock's configuration beside the library (its default place)."""
    (root / LIBDIR / "nvml-mock.conf").write_text(text)


def smi(root, *args, env=None):
    """Run the reader under root as a container would find the library: (rc, stdout)."""
    run_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_LIBRARY_PATH": str(root / LIBDIR)}
    run_env.update(env or {})
    done = subprocess.run([str(root / "usr/bin/nvidia-smi")] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=run_env, universal_newlines=True, timeout=30,
                          check=False)
    return done.returncode, done.stdout


def listed(root, env=None):
    """[(index, name, uuid)] of `nvidia-smi -L`."""
    rc, out = smi(root, "-L", env=env)
    assert rc == 0, out
    return [tuple(m.groups()) for m in re.finditer(r"^GPU (\d+): (.+) \(UUID: (\S+)\)$", out, re.M)]


@pytest.fixture(scope="session")
def dp_probe(tmp_path_factory):
    """dp-probe built from toolchain/nvidia-device-plugin (the kubelet pluginapi the plugin pins)."""
    out = tmp_path_factory.mktemp("probe") / "dp-probe"
    subprocess.run(["go", "build", "-mod=readonly", "-o", str(out), "./dpprobe"],
                   cwd=str(TOOLCHAIN / "nvidia-device-plugin"), env=dict(os.environ, CGO_ENABLED="0"),
                   check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return out
