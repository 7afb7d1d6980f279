#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Write the CDI spec that hands the MOCK GPUs to containers (kind nvidia.com/gpu).

    gpu_cdi_spec.py --driver-root ROOT [--output FILE] [--uvm-major N] [--caps-major N]
                    [--mig-state NODE-PATH] [--hold-hook NODE-PATH]

It asks the lab's nvidia-smi reader under ROOT (ROOT/usr/bin/nvidia-smi, reading
ROOT/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 - the mock) for index and UUID of every GPU and
names each device twice, by UUID and by index, as NVIDIA's k8s-test-infra writes its spec by
hand (nvidia-ctk cdi generate over a mock is not relied on). Per GPU: /dev/nvidia<index>
(c 195 <index>); common to all: /dev/nvidiactl (c 195 255), /dev/nvidia-uvm (c <uvm-major> 0),
the mock library, its configuration and card table, and the reader as /usr/bin/nvidia-smi
(nvidia-ctk's generated specs mount the driver's nvidia-smi the same way), plus
NVML_MOCK_DEVICE_NODES=/dev so the mock lists only the GPUs whose nodes the container got.
type/major/minor are spelled out: the runtime then needs no host device node
(container-device-interface v1.1.1 stats hostPath only without them). JSON is YAML, and CDI
reads .json specs. The NVIDIA container runtime in mode "cdi" resolves
NVIDIA_VISIBLE_DEVICES=<uuid> to nvidia.com/gpu=<uuid> against it.

MIG devices (issue 40), asked of the mock's NVML as nvidia-ctk cdi generate asks NVML: each by
its MIG- UUID and as "<gpu>:<mig index>", with its parent's /dev/nvidia<minor> and the capability
nodes of its GPU and compute instance, /dev/nvidia-caps/nvidia-cap<N> (N as
/proc/driver/nvidia-caps/mig-minors numbers them, nvml_mock/gpu_view.sh) - in a container the
mock lists only the MIG devices whose capability nodes it got. --mig-state: the mock's MIG state
file in the node's view, mounted beside the container's configuration (where the mock looks for
it) once it exists. --hold-hook: a program the runtime runs for each MIG device a container gets
(createRuntime: hold, poststop: release) - the mock's holders, as a driver knows which process
uses an instance.
"""

import ctypes

import argparse
import json
import os
import subprocess
import sys
import tempfile

LIBDIR = "usr/lib/x86_64-linux-gnu"
MOUNT_OPTIONS = ["ro", "nosuid", "nodev", "rbind", "rprivate"]
NVIDIA_MAJOR = 195   # /dev/nvidia<N> and /dev/nvidiactl (minor 255): fixed by the driver


def gpus(driver_root):
    """[(index, uuid)] as the reader lists them over the mock under driver_root."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(driver_root, LIBDIR))
    env.pop("NVML_MOCK_DEVICE_NODES", None)
    done = subprocess.run([os.path.join(driver_root, "usr/bin/nvidia-smi"), "--query-gpu=index,uuid",
                           "--format=csv,noheader"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env, universal_newlines=True, check=False)
    if done.returncode != 0:
        raise SystemExit("gpu_cdi_spec.py: nvidia-smi under %s failed (exit %d): %s"
                         % (driver_root, done.returncode, done.stdout.strip()))
    found = []
    for line in done.stdout.splitlines():
        index, uuid = [f.strip() for f in line.split(",")]
        found.append((int(index), uuid))
    return found


def mig_devices(driver_root):
    """[(gpu index, gpu minor, MIG index, GI ID, CI ID, MIG UUID)] through the mock's NVML."""
    os.environ.pop("NVML_MOCK_DEVICE_NODES", None)   # the node's view: every MIG device
    try:
        nvml = ctypes.CDLL(os.path.join(driver_root, LIBDIR, "libnvidia-ml.so.1"))
    except OSError as err:
        raise SystemExit("gpu_cdi_spec.py: the mock NVML library under %s: %s" % (driver_root, err))
    if nvml.nvmlInit_v2() != 0:
        return []                                     # no GPUs now (a drill's fault): none
    found = []
    try:
        count = ctypes.c_uint()
        nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
        for index in range(count.value):
            gpu, minor, most = ctypes.c_void_p(), ctypes.c_uint(), ctypes.c_uint()
            if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(gpu)) != 0:
                continue
            nvml.nvmlDeviceGetMinorNumber(gpu, ctypes.byref(minor))
            if nvml.nvmlDeviceGetMaxMigDeviceCount(gpu, ctypes.byref(most)) != 0:
                continue
            n = 0
            for k in range(most.value):
                mig, gi, ci = ctypes.c_void_p(), ctypes.c_uint(), ctypes.c_uint()
                if nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, k, ctypes.byref(mig)) != 0:
                    continue
                uuid = ctypes.create_string_buffer(96)
                nvml.nvmlDeviceGetGpuInstanceId(mig, ctypes.byref(gi))
                nvml.nvmlDeviceGetComputeInstanceId(mig, ctypes.byref(ci))
                nvml.nvmlDeviceGetUUID(mig, uuid, 96)
                found.append((index, minor.value, n, gi.value, ci.value, uuid.value.decode()))
                n += 1
    finally:
        nvml.nvmlShutdown()
    return found


def cap_minor(minor, gi, ci=None):
    """/proc/driver/nvidia-caps/mig-minors' number of gpu<minor>/gi<gi>[/ci<ci>]/access (gpu_view.sh)."""
    return 3 + minor * 135 + gi * 9 + (0 if ci is None else 1 + ci)


def node(path, major, minor):
    """A CDI device node, type and numbers spelled out."""
    return {"path": path, "type": "c", "major": major, "minor": minor, "permissions": "rw"}


def mount(driver_root, rel, container_path=None):
    """A read-only bind mount of driver_root/rel."""
    return {"hostPath": os.path.join(driver_root, rel), "containerPath": container_path or "/" + rel,
            "options": list(MOUNT_OPTIONS)}


def spec(driver_root, listed, uvm_major, migs=(), caps_major=508, mig_state=None, hold_hook=None):
    """The CDI spec (a dict) for the GPUs listed and their MIG devices."""
    devices = []
    for index, uuid in listed:
        edits = {"deviceNodes": [node("/dev/nvidia%d" % index, NVIDIA_MAJOR, index)]}
        devices.append({"name": uuid, "containerEdits": edits})
        devices.append({"name": str(index), "containerEdits": edits})
    for index, minor, n, gi, ci, uuid in migs:
        edits = {"deviceNodes": [node("/dev/nvidia%d" % minor, NVIDIA_MAJOR, minor),
                                 node("/dev/nvidia-caps/nvidia-cap%d" % cap_minor(minor, gi), caps_major,
                                      cap_minor(minor, gi)),
                                 node("/dev/nvidia-caps/nvidia-cap%d" % cap_minor(minor, gi, ci), caps_major,
                                      cap_minor(minor, gi, ci))]}
        if hold_hook:
            edits["hooks"] = [{"hookName": "createRuntime", "path": hold_hook,
                               "args": [os.path.basename(hold_hook), "hold", uuid]},
                              {"hookName": "poststop", "path": hold_hook,
                               "args": [os.path.basename(hold_hook), "release", uuid]}]
        devices.append({"name": uuid, "containerEdits": edits})
        devices.append({"name": "%d:%d" % (index, n), "containerEdits": edits})
    devices.append({"name": "all", "containerEdits": {
        "deviceNodes": [node("/dev/nvidia%d" % index, NVIDIA_MAJOR, index) for index, _ in listed]}})
    mounts = [mount(driver_root, os.path.join(LIBDIR, name))
              for name in ("libnvidia-ml.so.1", "nvml-mock.conf", "nvml-mock-cards.tsv")
              if os.path.exists(os.path.join(driver_root, LIBDIR, name))]
    if mig_state:
        # beside the configuration, where the mock looks for its state in the container
        mounts.append({"hostPath": mig_state, "containerPath": "/" + os.path.join(LIBDIR, os.path.basename(mig_state)),
                       "options": list(MOUNT_OPTIONS)})
    mounts.append(mount(driver_root, "usr/bin/nvidia-smi"))
    return {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": devices,
            "containerEdits": {"env": ["NVML_MOCK_DEVICE_NODES=/dev"],
                               "deviceNodes": [node("/dev/nvidiactl", NVIDIA_MAJOR, 255),
                                               node("/dev/nvidia-uvm", uvm_major, 0)],
                               "mounts": mounts}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver-root", required=True)
    parser.add_argument("--output", help="write here (atomically) instead of stdout")
    parser.add_argument("--uvm-major", type=int, default=510,
                        help="nvidia-uvm's major: dynamic on a real host (/proc/devices); any unused number here")
    parser.add_argument("--caps-major", type=int, default=508,
                        help="nvidia-caps' major: dynamic on a real host (/proc/devices); any unused number here")
    parser.add_argument("--mig-state", help="the mock's MIG state file as the node sees it (mounted when it exists)")
    parser.add_argument("--mig-state-here", help="the same file as this process sees it (default: --mig-state)")
    parser.add_argument("--hold-hook", help="the node's path of the program that holds and releases a MIG device")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.driver_root)
    state = args.mig_state if args.mig_state and os.path.exists(args.mig_state_here or args.mig_state) else None
    text = json.dumps(spec(root, gpus(root), args.uvm_major, mig_devices(root), args.caps_major, state,
                           args.hold_hook), indent=2) + "\n"
    if not args.output:
        sys.stdout.write(text)
        return 0
    folder = os.path.dirname(os.path.abspath(args.output))
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=".cdi-")
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
