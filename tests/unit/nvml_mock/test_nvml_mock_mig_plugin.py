"""NVIDIA's device plugin v0.19.3 (built by the lab) over a mock that NVIDIA's nvidia-mig-parted
has partitioned: what it advertises through its registration, per MIG strategy (issue 40 item 3's
numbers on 4 x A100-SXM4-40GB).

mig-parted applies a layout of the GPU Operator's default config in one mount namespace; the
plugin then runs in another (and a PID namespace, as a Pod), over the same MIG state file, with
nvml_mock/gpu_view.sh's view - /sys/bus/pci/devices for NUMA, /proc/driver/nvidia-caps/mig-minors
for each MIG device's capability paths (internal/rm/nvml_devices.go GetPaths) - and dp-probe
standing in for the kubelet's registration side (as tests/unit/roles/test_gpu_stack_plugin.py does).
"""
import json
import os
import signal
import subprocess

import pytest

from gpu_stack_testing import nvidia_binary
from lab_testing import wait_for
from nvml_mock_testing import CONFIG, GPU_VIEW, LIBDIR  # noqa: F401

TIME_SLICING = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 5\n"


@pytest.fixture
def advertised(built, dp_probe, tmp_path):  # noqa: F811
    """Run the plugin until dp-probe has the device lists of `count` resources: {resource: (devices, healthy)}."""
    plugin = nvidia_binary("nvidia-device-plugin")
    root = built / "root"

    def run(strategy, resources, config=None):
        work = tmp_path / ("plugin-%s-%d" % (strategy, len(list(tmp_path.glob("plugin-*")))))
        work.mkdir()
        args = ["--nvidia-driver-root=%s" % root, "--driver-root-ctr-path=%s" % root,
                "--device-discovery-strategy=nvml", "--mig-strategy=%s" % strategy]
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
            return wait_for("%d device lists from the plugin (log: %s)" % (resources, work / "plugin.log"),
                        lambda: lists() or (proc.poll() is not None and pytest.fail(
                            (work / "plugin.log").read_text()[-2000:])), 60)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    return run


def test_the_plugin_advertises_what_mig_parted_made(parted_view, mig_parted, advertised):
    node = parted_view
    node(mig_parted, "apply", "-f", CONFIG, "-c", "all-1g.5gb")
    assert advertised("mixed", 1) == {"nvidia.com/mig-1g.5gb": (28, 28)}
    assert advertised("single", 1) == {"nvidia.com/gpu": (28, 28)}
    node(mig_parted, "apply", "-f", CONFIG, "-c", "all-balanced")
    assert advertised("mixed", 3) == {"nvidia.com/mig-1g.5gb": (8, 8), "nvidia.com/mig-2g.10gb": (4, 4),
                                      "nvidia.com/mig-3g.20gb": (4, 4)}
    node(mig_parted, "apply", "-f", CONFIG, "-c", "all-disabled")
    assert advertised("mixed", 1, config=TIME_SLICING) == {"nvidia.com/gpu": (20, 20)}   # step 7's 20
