#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Write the CDI spec that hands the MOCK GPUs to containers (kind nvidia.com/gpu).

    gpu_cdi_spec.py --driver-root ROOT [--output FILE] [--uvm-major N]

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
"""

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


def node(path, major, minor):
    """A CDI device node, type and numbers spelled out."""
    return {"path": path, "type": "c", "major": major, "minor": minor, "permissions": "rw"}


def mount(driver_root, rel, container_path=None):
    """A read-only bind mount of driver_root/rel."""
    return {"hostPath": os.path.join(driver_root, rel), "containerPath": container_path or "/" + rel,
            "options": list(MOUNT_OPTIONS)}


def spec(driver_root, listed, uvm_major):
    """The CDI spec (a dict) for the GPUs listed."""
    devices = []
    for index, uuid in listed:
        edits = {"deviceNodes": [node("/dev/nvidia%d" % index, NVIDIA_MAJOR, index)]}
        devices.append({"name": uuid, "containerEdits": edits})
        devices.append({"name": str(index), "containerEdits": edits})
    devices.append({"name": "all", "containerEdits": {
        "deviceNodes": [node("/dev/nvidia%d" % index, NVIDIA_MAJOR, index) for index, _ in listed]}})
    mounts = [mount(driver_root, os.path.join(LIBDIR, name))
              for name in ("libnvidia-ml.so.1", "nvml-mock.conf", "nvml-mock-cards.tsv")
              if os.path.exists(os.path.join(driver_root, LIBDIR, name))]
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
    args = parser.parse_args(argv)
    root = os.path.abspath(args.driver_root)
    text = json.dumps(spec(root, gpus(root), args.uvm_major), indent=2) + "\n"
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
