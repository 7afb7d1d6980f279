"""What the MIG tests of the mock share (tests/unit/nvml_mock/): the mock built once as a driver root
with the C harness of go-nvml's calls, NVIDIA's nvidia-mig-parted, and the mock's GPU view in a
mount namespace of its own. Fixtures reach the tests through this folder's conftest.py."""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys

import pytest

from ansible.module_utils.sharing import cards
from gpu_stack_testing import go_nvml_dir, nvidia_binary  # noqa: F401  (go-nvml's nvml.h: one owner)
from lab_testing import wait_for

ROOT = pathlib.Path(__file__).resolve().parents[3]
MOCK_SRC = ROOT / "nvml_mock"
LIBDIR = "usr/lib/x86_64-linux-gnu"
LISTINGS = ROOT / "tests/sharing_corpus/mig_listings"
# nvml.h of go-nvml (the version the device plugin pins), enum nvmlReturn_enum
SUCCESS, NOT_SUPPORTED, NOT_FOUND, RESET_REQUIRED, IN_USE, INSUFFICIENT_RESOURCES = 0, 3, 6, 16, 19, 23
A100 = cards.CARDS["A100-SXM4-40GB"]["profiles"]
sys.path.insert(0, str(MOCK_SRC))
MIG_UUID = re.compile(r"^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


_BUILT = {}     # one build for every module of the session


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The mock as a driver root and the harness linked against it (built once per session)."""
    if not shutil.which("gcc"):
        pytest.skip("no gcc: the mock NVML library is C")
    if "base" not in _BUILT:
        _BUILT["base"] = build(tmp_path_factory.mktemp("nvml-mock-mig"))
    return _BUILT["base"]


def build(base):
    nvml = go_nvml_dir()
    subprocess.run(["bash", str(MOCK_SRC / "build.sh"), "--driver-root", str(base / "root")], check=True,
                   env=dict(os.environ, GO_NVML_DIR=str(nvml)),
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lib = base / "root" / LIBDIR
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-DNVML_NO_UNVERSIONED_FUNC_DEFS=1", "-I", str(nvml),
                    "-o", str(base / "harness"), str(pathlib.Path(__file__).with_name("mig_harness.c")),
                    str(lib / "libnvidia-ml.so.1"), "-Wl,-rpath," + str(lib)], check=True)
    return base


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
def parted_view(built, mig_parted, tmp_path):
    """Run commands in a mount namespace of their own holding the mock's GPU view."""
    conf = tmp_path / "nvml-mock.conf"

    def configure(card="A100-SXM4-40GB", count=4):
        """The mock's card and count (the mock re-reads its configuration when it changes)."""
        conf.write_text("card = %s\ncount = %d\nmig_state = %s\n" % (card, count, tmp_path / "mig.state"))
    configure()
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
    run.configure = configure
    run.root, run.env, run.view = built / "root", dict(os.environ, **env), tmp_path / "view"
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


@pytest.fixture
def advertised(built, dp_probe, tmp_path):  # noqa: F811
    """Run the plugin until dp-probe has the device lists of `count` resources: {resource: (devices, healthy)}."""
    plugin = nvidia_binary("nvidia-device-plugin")
    root = built / "root"

    def run(strategy, resources, config=None, refused=False, log_says=None):
        """strategy None: no --mig-strategy (the config's flags decide). refused=True: the plugin
        must stop on its config; log_says: wait until its log says this. Both return the log."""
        work = tmp_path / ("plugin-%s-%d" % (strategy or "config", len(list(tmp_path.glob("plugin-*")))))
        work.mkdir()
        args = ["--nvidia-driver-root=%s" % root, "--driver-root-ctr-path=%s" % root,
                "--device-discovery-strategy=nvml",
                # as the GPU Operator passes it (MPS_ROOT); v0.19.3 refuses an MPS config without it
                "--mps-root=%s" % (work / "mps")] + (["--mig-strategy=%s" % strategy] if strategy else [])
        if config:
            (work / "config.yaml").write_text(config)
            args.append("--config-file=%s" % (work / "config.yaml"))
        script = "\n".join([
            "set -e",
            'LD_LIBRARY_PATH=%s PATH=%s:$PATH bash %s %s/view > /dev/null' % (root / LIBDIR, root / "usr/bin",
                                                                          GPU_VIEW, work),
            "mount -t tmpfs tmpfs /var/lib", "mkdir -p /var/lib/kubelet/device-plugins",
            '"$0" > %s/probe.jsonl 2>&1 &' % work,
            "i=0; while [ ! -S /var/lib/kubelet/device-plugins/kubelet.sock ]; do i=$((i+1)); "
            "[ $i -le 200 ] || { echo 'dp-probe never listened' >&2; exit 3; }; sleep 0.05; done",
            'exec "$1" ' + " ".join(args)])
        env = dict(os.environ, NVML_MOCK_CONFIG=str(tmp_path / "nvml-mock.conf"))
        with open(str(work / "plugin.log"), "w") as log:
            proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--pid", "--fork",
                                     "--mount-proc", "bash", "-c", script, str(dp_probe), str(plugin)],
                                    stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

        def lists():
            found = {}
            probe = work / "probe.jsonl"
            for line in (probe.read_text().splitlines() if probe.exists() else []):
                event = json.loads(line) if line.startswith("{") else {}
                if event.get("event") == "devices":
                    found[event["resource"]] = (event["count"], event["healthy"])
            return found if len(found) >= resources else None
        try:
            if log_says:
                wait_for("the plugin's log to say %r (log: %s)" % (log_says, work / "plugin.log"),
                         lambda: log_says in (work / "plugin.log").read_text() or (proc.poll() is not None and pytest.fail(
                             (work / "plugin.log").read_text()[-2000:])), 60)
                return (work / "plugin.log").read_text()
            if refused:
                wait_for("the plugin to stop on its config (log: %s)" % (work / "plugin.log"),
                         lambda: proc.poll() is not None or (lists() and pytest.fail(
                             "the plugin advertised %s instead: %s" % (lists(), (work / "plugin.log").read_text()[-2000:]))), 60)
                return (work / "plugin.log").read_text()
            return wait_for("%d device lists from the plugin (log: %s)" % (resources, work / "plugin.log"),
                        lambda: lists() or (proc.poll() is not None and pytest.fail(
                            (work / "plugin.log").read_text()[-2000:])), 60)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:   # it stopped by itself (refused) and its group is gone
                pass
            proc.wait(timeout=30)
    return run
