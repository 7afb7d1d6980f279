"""NVIDIA's unmodified device plugin (v0.19.3, built by toolchain/build.sh) over the mock NVML
library.

Each run is a private mount namespace (`unshare --mount --propagation private`): a tmpfs over
/var/lib there holds /var/lib/kubelet/device-plugins, so nothing appears on the host and the
namespace, with its socket folder, ends with the processes. The plugin gets the mock's driver
root exactly as the GPU Operator's DaemonSet passes one: --nvidia-driver-root and
--driver-root-ctr-path, --device-discovery-strategy=nvml. Where a test needs the kubelet's side
of the device plugin API, dp-probe (toolchain/nvidia-device-plugin/dpprobe, k8s.io/kubelet's
pluginapi) stands in for it: it serves Registration on kubelet.sock and follows ListAndWatch as
the kubelet does. The real kubelet comes with the real node's integration.
"""
import json
import os
import re
import shlex
import signal
import subprocess
import time

import pytest

from test_gpu_stack import LIBDIR, TOOLCHAIN, driver_root, listed, mock_build, mock_conf, nvidia_binary  # noqa: F401

SOCKET_DIR = "/var/lib/kubelet/device-plugins"
TIME_SLICING = """version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 5
"""


@pytest.fixture(scope="session")
def dp_probe(tmp_path_factory):
    """dp-probe built from toolchain/nvidia-device-plugin (the kubelet pluginapi the plugin pins)."""
    out = tmp_path_factory.mktemp("probe") / "dp-probe"
    subprocess.run(["go", "build", "-mod=readonly", "-o", str(out), "./dpprobe"],
                   cwd=str(TOOLCHAIN / "nvidia-device-plugin"), env=dict(os.environ, CGO_ENABLED="0"),
                   check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return out


@pytest.fixture
def plugin_binary():
    if os.geteuid() != 0:
        pytest.skip("a private mount namespace (unshare --mount) needs root")
    return nvidia_binary("nvidia-device-plugin")


def poll(what, check, timeout):
    """check() until it returns something true, at most timeout seconds; fail saying what was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail("waited %ss for %s" % (timeout, what))
        time.sleep(0.1)


class Plugin:
    """The device plugin in a private mount namespace, optionally with dp-probe beside it."""

    def __init__(self, tmp, binary, root, config=None, probe=None, allocate=0, env=None):
        self.log = tmp / "plugin.log"
        self.probe_out = tmp / "probe.jsonl"
        args = ["--nvidia-driver-root=%s" % root, "--driver-root-ctr-path=%s" % root,
                "--device-discovery-strategy=nvml"]
        if config:
            (tmp / "config.yaml").write_text(config)
            args.append("--config-file=%s" % (tmp / "config.yaml"))
        script = ["set -e", "mount -t tmpfs tmpfs /var/lib", "mkdir -p %s" % SOCKET_DIR]
        if probe:
            script += ['"$0" -allocate %d > %s 2>&1 &' % (allocate, self.probe_out),
                       # bounded: dp-probe listens within 10 s or the run stops, saying so
                       "i=0; while [ ! -S %s/kubelet.sock ]; do i=$((i+1)); [ $i -le 200 ] || "
                       "{ echo 'dp-probe never listened' >&2; exit 3; }; sleep 0.05; done" % SOCKET_DIR]
        script.append('exec "$1" ' + " ".join(shlex.quote(a) for a in args))
        self.log_handle = open(str(self.log), "w")
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script),
             str(probe or "-"), str(binary)],
            stdout=self.log_handle, stderr=subprocess.STDOUT, start_new_session=True,
            env=dict(os.environ, **(env or {})))

    def text(self):
        return self.log.read_text()

    def wait_log(self, pattern, timeout=30):
        """The first match of pattern in the plugin's log, waiting for it."""
        return poll("the plugin to log %r (log so far: %s)" % (pattern, self.text()[-1500:]),
                    lambda: re.search(pattern, self.text(), re.M), timeout)

    def events(self):
        if not self.probe_out.exists():
            return []
        return [json.loads(line) for line in self.probe_out.read_text().splitlines() if line.startswith("{")]

    def wait_event(self, what, check, timeout=30):
        """The first dp-probe event for which check(event) holds."""
        return poll("dp-probe to see %s (events so far: %s)" % (what, [(e["event"], e.get("count"),
                    e.get("healthy")) for e in self.events()]),
                    lambda: next((e for e in self.events() if check(e)), None), timeout)

    def wait_exit(self, timeout=30):
        return poll("the plugin to exit", lambda: self.proc.poll() is not None, timeout) and self.proc.returncode

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log_handle.close()


@pytest.fixture
def run_plugin(tmp_path, plugin_binary):
    started = []
    host_had_kubelet_dir = os.path.exists("/var/lib/kubelet")

    def start(root, **kwargs):
        work = tmp_path / ("run%d" % len(started))
        work.mkdir()
        started.append(Plugin(work, plugin_binary, root, **kwargs))
        return started[-1]

    yield start
    for plugin in started:
        plugin.stop()
    assert os.path.exists("/var/lib/kubelet") == host_had_kubelet_dir, "the run left /var/lib/kubelet on the host"


def error_lines(text):
    """The plugin's E lines without time and pid: what it says, comparable between runs."""
    return [re.sub(r"^E\d{4} [\d:.]+\s+\d+ ", "", line) for line in text.splitlines() if line.startswith("E")]


def test_finds_the_gpus_and_serves_without_a_kubelet(run_plugin, driver_root):
    """No kubelet socket: it still finds the GPUs (a GRPC server per resource, never "No devices
    found"), serves them, then fails to register and retries - its own words."""
    plugin = run_plugin(driver_root)
    plugin.wait_log(r"Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock$")
    assert re.search(r"Starting GRPC server for 'nvidia.com/gpu'$", plugin.text(), re.M)
    assert re.search(r'"Starting NVIDIA Device Plugin" version="v0.19.3"', plugin.text())
    plugin.wait_log(r"Could not register device plugin: context deadline exceeded$")
    plugin.wait_log(r"Failed to start one or more plugins. Retrying in 30s...$")
    assert "No devices found" not in plugin.text()


def test_advertises_the_mocks_four_gpus(run_plugin, driver_root, dp_probe):
    uuids = sorted(g[2] for g in listed(driver_root))
    plugin = run_plugin(driver_root, probe=dp_probe, allocate=1)
    reg = plugin.wait_event("the registration", lambda e: e["event"] == "register")
    assert (reg["resource"], reg["endpoint"], reg["version"]) == ("nvidia.com/gpu", "nvidia-gpu.sock", "v1beta1")
    assert reg["options"] == {"get_preferred_allocation_available": True}
    devices = plugin.wait_event("the device list", lambda e: e["event"] == "devices")
    assert (devices["count"], devices["healthy"], devices["ids"]) == (4, 4, uuids)
    allocated = plugin.wait_event("an allocation", lambda e: e["event"] == "allocate")
    assert allocated["envs"] == {"NVIDIA_VISIBLE_DEVICES": uuids[0]}
    plugin.wait_log(r"Registered device plugin for 'nvidia.com/gpu' with Kubelet$")


def test_time_slicing_advertises_twenty_and_an_xid_takes_one_replica(run_plugin, driver_root, dp_probe):
    """replicas: 5 -> <uuid>::0..4 per GPU (internal/rm/device_map.go). An Xid the plugin does not
    ignore on GPU 1 marks ONE replica unhealthy, 20 -> 19, not 15: NVIDIA/k8s-device-plugin#1929
    (its health check maps each GPU's UUID to one replica), fixed by PR #1930, in no release the
    module proxy serves. Xid 13 (an application error) is ignored (internal/rm/health.go)."""
    mock_conf(driver_root, "card = A100-SXM4-40GB\n")
    gpus = listed(driver_root)
    plugin = run_plugin(driver_root, config=TIME_SLICING, probe=dp_probe)
    devices = plugin.wait_event("the device list", lambda e: e["event"] == "devices")
    assert devices["count"] == 20 and devices["healthy"] == 20
    assert devices["ids"] == sorted("%s::%d" % (g[2], k) for g in gpus for k in range(5))
    plugin.wait_log(r"Ignoring the following XIDs for health checks")
    with open(str(driver_root / LIBDIR / "nvml-mock.conf"), "a") as conf:
        conf.write("xid = 1 13\n")
    plugin.wait_log(r"health.go:\d+\] Skipping event .*EventData:13 ")
    with open(str(driver_root / LIBDIR / "nvml-mock.conf"), "a") as conf:
        conf.write("xid = 1 79\n")
    plugin.wait_log(r"XidCriticalError: Xid=79 on Device=%s::\d; marking device as unhealthy\.$" % gpus[1][2])
    after = plugin.wait_event("19 healthy", lambda e: e["event"] == "devices" and e["healthy"] < 20)
    assert (after["count"], after["healthy"]) == (20, 19)
    sick = [i for i, h in after["health"].items() if h != "Healthy"]
    assert len(sick) == 1 and sick[0].startswith(gpus[1][2] + "::")


def test_a_lost_gpu_makes_every_device_unhealthy(run_plugin, driver_root, dp_probe):
    """The mock follows NVML's documentation for a GPU off the bus: an Xid 79 event, then
    GPU_IS_LOST from its queries; the plugin cannot name the event's GPU and marks them all."""
    plugin = run_plugin(driver_root, probe=dp_probe)
    plugin.wait_event("the device list", lambda e: e["event"] == "devices" and e["healthy"] == 4)
    plugin.wait_log(r"Ignoring the following XIDs for health checks")
    with open(str(driver_root / LIBDIR / "nvml-mock.conf"), "a") as conf:
        conf.write("lost = 2\n")
    plugin.wait_log(r"Failed to determine uuid for event .*: GPU is lost; Marking all devices as unhealthy\.$")
    plugin.wait_event("no healthy device", lambda e: e["event"] == "devices" and e["healthy"] == 0)


def test_version_mismatch_stops_the_plugin_with_nvmls_words(run_plugin, driver_root):
    mock_conf(driver_root, "fault = version-mismatch\nlibrary_version = 550.127.05\n")
    plugin = run_plugin(driver_root)
    assert plugin.wait_exit() == 1
    lines = error_lines(plugin.text())
    assert "factory.go:99] Failed to initialize NVML: Driver/library version mismatch." in lines
    assert any(line.endswith("nvml init failed: Driver/library version mismatch") for line in lines), lines


def test_library_gone_reads_the_same_both_ways(run_plugin, driver_root, tmp_path):
    """The fault library-gone says what a driver root without the file says (go-nvml's words)."""
    mock_conf(driver_root, "fault = library-gone\n")
    faulted = run_plugin(driver_root)
    assert faulted.wait_exit() == 1
    (driver_root / LIBDIR / "libnvidia-ml.so.1").unlink()
    gone = run_plugin(driver_root)
    assert gone.wait_exit() == 1
    assert error_lines(faulted.text()) == error_lines(gone.text())
    assert "factory.go:99] Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND." in error_lines(gone.text())


def test_no_socket_folder_is_the_plugins_first_complaint(plugin_binary, driver_root):
    """Without /var/lib/kubelet/device-plugins in its view (the DaemonSet's mount missing) the plugin
    stops at once - the words of the plugin-no-mount drill."""
    host_had_kubelet_dir = os.path.exists("/var/lib/kubelet")
    script = 'mount -t tmpfs tmpfs /var/lib && exec "$0" --nvidia-driver-root="$1" --driver-root-ctr-path="$1"'
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(plugin_binary),
                           str(driver_root)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "failed to create FS watcher for /var/lib/kubelet/device-plugins/: no such file or directory" in done.stdout
    assert os.path.exists("/var/lib/kubelet") == host_had_kubelet_dir
