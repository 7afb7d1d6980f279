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

import pytest

from gpu_stack_testing import LIBDIR, PLUGIN, TOOLCHAIN, listed, mock_conf, nvidia_binary
from lab_testing import wait_for

SOCKET_DIR = "/var/lib/kubelet/device-plugins"
TIME_SLICING = """version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 5
"""


@pytest.fixture
def plugin_binary():
    if os.geteuid() != 0:
        pytest.skip("a private mount namespace (unshare --mount) needs root")
    return nvidia_binary("nvidia-device-plugin")


class Plugin:
    """The device plugin in a private mount namespace, optionally with dp-probe beside it."""

    def __init__(self, tmp, binary, root, config=None, probe=None, allocate=0, env=None, argv0=None,
                 config_path=None, manager=None):
        self.log = tmp / "plugin.log"
        self.probe_out = tmp / "probe.jsonl"
        args = ["--nvidia-driver-root=%s" % root, "--driver-root-ctr-path=%s" % root,
                "--device-discovery-strategy=nvml"]
        if config:
            (tmp / "config.yaml").write_text(config)
            config_path = tmp / "config.yaml"
        if config_path:
            args.append("--config-file=%s" % config_path)
        script = ["set -e", "mount -t tmpfs tmpfs /var/lib", "mkdir -p %s" % SOCKET_DIR]
        if probe:
            script += ['"$0" -allocate %d > %s 2>&1 &' % (allocate, self.probe_out),
                       # bounded: dp-probe listens within 10 s or the run stops, saying so
                       "i=0; while [ ! -S %s/kubelet.sock ]; do i=$((i+1)); [ $i -le 200 ] || "
                       "{ echo 'dp-probe never listened' >&2; exit 3; }; sleep 0.05; done" % SOCKET_DIR]
        if manager:  # config-manager beside the plugin, as the Operator's sidecar
            self.manager_log = tmp / "config-manager.log"
            script.append(" ".join(shlex.quote(a) for a in manager) + " > %s 2>&1 &" % self.manager_log)
        # argv0: a name of its own, for config-manager's --process-to-signal (bash's exec -a)
        script.append('exec -a %s "$1" ' % shlex.quote(argv0 or str(binary)) + " ".join(shlex.quote(a) for a in args))
        self.log_handle = open(str(self.log), "w")
        self.proc = subprocess.Popen(
            # a PID namespace of its own too, as a Pod's: config-manager looks for the process to
            # signal among all it can see, and panics on a kernel thread's empty command line
            # (cmd/config-manager/main.go findPidToSignal: cmdline[0])
            ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc",
             "bash", "-c", "\n".join(script),
             str(probe or "-"), str(binary)],
            stdout=self.log_handle, stderr=subprocess.STDOUT, start_new_session=True,
            env=dict(os.environ, **(env or {})))

    def text(self):
        return self.log.read_text()

    def wait_log(self, pattern, timeout=30):
        """The first match of pattern in the plugin's log, waiting for it."""
        return wait_for("the plugin to log %r (log so far: %s)" % (pattern, self.text()[-1500:]),
                    lambda: re.search(pattern, self.text(), re.M), timeout)

    def events(self):
        if not self.probe_out.exists():
            return []
        return [json.loads(line) for line in self.probe_out.read_text().splitlines() if line.startswith("{")]

    def wait_event(self, what, check, timeout=30):
        """The first dp-probe event for which check(event) holds."""
        return wait_for("dp-probe to see %s (events so far: %s)" % (what, [(e["event"], e.get("count"),
                    e.get("healthy")) for e in self.events()]),
                    lambda: next((e for e in self.events() if check(e)), None), timeout)

    def wait_exit(self, timeout=30):
        return wait_for("the plugin to exit", lambda: self.proc.poll() is not None, timeout) and self.proc.returncode

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
    assert re.search(r'"Starting NVIDIA Device Plugin" version="%s"' % re.escape(PLUGIN[1]), plugin.text())
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


class FakeNodeAPI:
    """The least of an API server config-manager needs: one Node, listed and watched (client-go
    v0.35 watches with sendInitialEvents first, WatchListClient being on by default; a plain
    LIST + WATCH works too). set_label() sends a MODIFIED event to every open watch. Loopback only."""

    def __init__(self, node, labels):
        import http.server
        import queue
        import threading
        self.node, self.labels, self.version, self.watches = node, dict(labels), 1, []
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                if not self.path.startswith("/api/v1/nodes"):
                    self.send_error(404)
                    return
                if "watch=true" not in self.path:
                    body = json.dumps({"kind": "NodeList", "apiVersion": "v1",
                                       "metadata": {"resourceVersion": str(api.version)}, "items": [api.object()]})
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body.encode())
                    return
                events = queue.Queue()
                if "sendInitialEvents=true" in self.path:
                    events.put({"type": "ADDED", "object": api.object()})
                    events.put({"type": "BOOKMARK", "object": {"kind": "Node", "apiVersion": "v1", "metadata": {
                        "resourceVersion": str(api.version), "annotations": {"k8s.io/initial-events-end": "true"}}}})
                api.watches.append(events)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    while True:
                        event = events.get()
                        if event is None:
                            break
                        data = (json.dumps(event) + "\n").encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def object(self):
        return {"kind": "Node", "apiVersion": "v1",
                "metadata": {"name": self.node, "resourceVersion": str(self.version), "labels": dict(self.labels)}}

    def set_label(self, key, value):
        self.labels[key] = value
        self.version += 1
        for events in self.watches:
            events.put({"type": "MODIFIED", "object": self.object()})

    def kubeconfig(self, path):
        url = "http://127.0.0.1:%d" % self.server.server_address[1]
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "fake",
                                    "clusters": [{"name": "fake", "cluster": {"server": url}}],
                                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
                                    "users": [{"name": "fake", "user": {}}]}))
        return path

    def close(self):
        for events in self.watches:
            events.put(None)
        self.server.shutdown()
        self.server.server_close()


LABEL = "nvidia.com/device-plugin.config"


@pytest.fixture
def node_api():
    api = FakeNodeAPI("lab-node-1", {})
    yield api
    api.close()


def config_manager_args(tmp_path, kubeconfig, *extra):
    srcdir = tmp_path / "configs"
    srcdir.mkdir(exist_ok=True)
    (srcdir / "any").write_text(TIME_SLICING)
    (srcdir / "default").write_text("version: v1\n")
    return [str(nvidia_binary("config-manager")), "--kubeconfig=%s" % kubeconfig, "--node-name=lab-node-1",
            "--node-label=%s" % LABEL, "--config-file-srcdir=%s" % srcdir,
            "--config-file-dst=%s" % (tmp_path / "config.yaml")] + list(extra)


def test_config_manager_links_the_labelled_config(tmp_path, node_api):
    """The node's label value names a file of --config-file-srcdir; the plugin's config file becomes
    a symlink to it (cmd/config-manager/main.go updateSymlink - a link, not a copy). Its first read
    of the label does not wait for the API (SyncableConfig.Get): it links the default first, then
    the labelled file once the node arrives - so a --oneshot run (the Operator's init container)
    can settle on the default although the label is set."""
    node_api.set_label(LABEL, "any")
    args = config_manager_args(tmp_path, node_api.kubeconfig(tmp_path / "kubeconfig"), "--default-config=default",
                               "--send-signal=false")
    log = open(str(tmp_path / "config-manager.log"), "w")
    manager = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for("config-manager to link 'any'", lambda: (tmp_path / "config.yaml").is_symlink()
             and os.readlink(str(tmp_path / "config.yaml")) == str(tmp_path / "configs/any"), 30)
        text = (tmp_path / "config-manager.log").read_text()
        assert "Label change detected: %s=any" % LABEL in text
        assert "Successfully updated to config: any" in text
    finally:
        os.killpg(manager.pid, signal.SIGTERM)
        manager.wait(timeout=15)
        log.close()


def test_label_to_twenty_devices_through_config_manager(tmp_path, node_api, run_plugin, driver_root, dp_probe):
    """Step 7 the way the GPU Operator runs it: the label changes, config-manager links the
    time-slicing config and sends SIGHUP to the process named --process-to-signal (argv[0] of a
    process it can see: the plugin's PID namespace is shared with it, as in the Operator's Pod),
    the plugin restarts with replicas 5 and the kubelet side sees 20 devices."""
    name = "nvidia-device-plugin"
    (tmp_path / "configs").mkdir()
    (tmp_path / "config.yaml").symlink_to(tmp_path / "configs/default")
    args = config_manager_args(tmp_path, node_api.kubeconfig(tmp_path / "kubeconfig"), "--default-config=default",
                               "--send-signal=true", "--signal=1", "--process-to-signal=%s" % name)
    plugin = run_plugin(driver_root, probe=dp_probe, argv0=name, config_path=tmp_path / "config.yaml",
                        manager=args)
    plugin.wait_event("4 devices", lambda e: e["event"] == "devices" and e["count"] == 4)
    wait_for("config-manager to find the default in place",
         lambda: "Already configured. Skipping update..." in plugin.manager_log.read_text(), 30)
    node_api.set_label(LABEL, "any")
    wait_for("config-manager to link 'any'", lambda: os.readlink(str(tmp_path / "config.yaml")).endswith("/any"), 30)
    plugin.wait_log(r"Received SIGHUP, restarting\.$")
    plugin.wait_event("20 devices", lambda e: e["event"] == "devices" and e["count"] == 20)
    assert "Successfully sent signal" in plugin.manager_log.read_text()
