"""NVIDIA's device plugin v0.19.3 (built by the lab) over a mock that NVIDIA's nvidia-mig-parted
has partitioned: what it advertises through its registration, per MIG strategy (issue 40 item 3's
numbers on 4 x A100-SXM4-40GB).

mig-parted applies a layout of the GPU Operator's default config in one mount namespace; the
plugin then runs in another (and a PID namespace, as a Pod), over the same MIG state file, with
nvml_mock/gpu_view.sh's view - /sys/bus/pci/devices for NUMA, /proc/driver/nvidia-caps/mig-minors
for each MIG device's capability paths (internal/rm/nvml_devices.go GetPaths) - and dp-probe
standing in for the kubelet's registration side (as tests/unit/roles/test_gpu_stack_plugin.py does).
"""
from nvml_mock_testing import CONFIG

TIME_SLICING = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 5\n"


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
