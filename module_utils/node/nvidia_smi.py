# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find and run nvidia-smi on a GPU node the way the GPU Operator does - Ansible-free.

Where nvidia-smi lives:
- a driver installed on the host: on PATH (``/usr/bin/nvidia-smi``);
- a driver the GPU Operator manages (its driver container): under the driver root
  ``/run/nvidia/driver``, run by chroot - the Operator's own validator runs
  ``chroot /run/nvidia/driver nvidia-smi`` (gpu-operator ``validator/main.go``, driver
  validation), because the binary needs the container's libraries.

What a run means for a guard that must never act on a guess:
- ``ok``: it ran, exit 0, and printed a driver version for every GPU line.
- ``failed``: it ran and the driver answered that it is broken (any other exit, e.g.
  9 "NVIDIA driver is not loaded", 12 "NVML shared library couldn't be found or loaded",
  15 "GPU has fallen off the bus", 255; or exit 0 without a version line).
- ``inconclusive``: it ran but says nothing about the driver - exit 2 (this nvidia-smi does
  not know the query), 4 (no permission), or chroot's own failures 125/126/127
  (coreutils chroot(1): cannot chroot / cannot run the command / command not found).
- ``missing``: no nvidia-smi on PATH and none under the driver root.
Exit codes: nvidia-smi(1), section RETURN VALUE.
"""

import os
import re

from ansible.module_utils.node import commands as node_commands

DRIVER_ROOT = "/run/nvidia/driver"
# the options of every module that runs nvidia-smi (documented in doc_fragments/nvidia_smi.py)
NVIDIA_SMI_ARGS = dict(nvidia_smi=dict(type="str", default="nvidia-smi"),
                       driver_root=dict(type="path", default=DRIVER_ROOT))
QUERY = ["--query-gpu=driver_version", "--format=csv,noheader"]
# the GPU listing the node facts and a bundle's nodes/<node>/nvidia-smi-query.csv come from
# (node.artefacts.parse_smi_query reads it)
GPU_QUERY = ["--query-gpu=index,name,uuid,driver_version,memory.total", "--format=csv,noheader"]
INCONCLUSIVE_RC = {2: "nvidia-smi does not know the query (exit 2: invalid argument)",
                   4: "no permission to ask the driver (exit 4): run as root (become: true)",
                   125: "chroot itself failed (exit 125): run as root (become: true)",
                   126: "the command under the driver root cannot run (exit 126)",
                   127: "the command under the driver root was not found (exit 127)"}
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)+$")


def locate(nvidia_smi="nvidia-smi", driver_root=DRIVER_ROOT, which=node_commands.which):
    """How nvidia-smi runs here: (argv as typed, argv resolved), or None when it is not installed.

    A path is used as given; a name is looked up on PATH, then under the driver root
    (<driver_root>/usr/bin/<name>, bin/, usr/local/bin/ - or the driver container's own
    ``nvidia-smi`` there) and run by ``chroot <driver_root> <name>``. As typed:
    ``nvidia-smi`` / ``chroot /run/nvidia/driver nvidia-smi``; resolved: the paths."""
    if os.sep in nvidia_smi:
        return ([nvidia_smi], [nvidia_smi]) if which(nvidia_smi) else None
    found = which(nvidia_smi)
    if found:
        return [nvidia_smi], [found]
    if driver_root:
        for name in dict.fromkeys((nvidia_smi, "nvidia-smi")):
            for sub in ("usr/bin", "bin", "usr/local/bin"):
                if os.access(os.path.join(driver_root, sub, name), os.X_OK):
                    chroot = which("chroot") or "/usr/sbin/chroot"
                    return ["chroot", driver_root, name], [chroot, driver_root, name]
    return None


def run(argv, timeout=30):
    """(rc, stdout, stderr) of argv as text; rc None when it could not be started or timed out."""
    done = node_commands.run(argv, timeout)
    return done.rc, done.out.decode("utf-8", "replace"), done.err.decode("utf-8", "replace")


def judge(rc, out, err):
    """{'status': ok|failed|inconclusive, 'version'?, 'output', 'reason'} of one query run."""
    output = "\n".join(x for x in ((out or "").strip(), (err or "").strip()) if x)
    if rc is None:
        return {"status": "inconclusive", "output": output, "reason": "could not run: " + output}
    if rc in INCONCLUSIVE_RC:
        return {"status": "inconclusive", "output": output, "reason": INCONCLUSIVE_RC[rc]}
    lines = [line.strip() for line in (out or "").splitlines() if line.strip()]
    if rc == 0 and lines and all(_VERSION.match(line) for line in lines):
        versions = sorted(set(lines))
        if len(versions) == 1:
            return {"status": "ok", "version": versions[0], "output": output,
                    "reason": "nvidia-smi printed driver %s for %d GPU(s)" % (versions[0], len(lines))}
        return {"status": "failed", "output": output,
                "reason": "nvidia-smi printed more than one driver version: %s" % ", ".join(versions)}
    if rc == 0:
        return {"status": "failed", "output": output,
                "reason": "nvidia-smi exited 0 but printed no driver version (no GPU seen)"}
    return {"status": "failed", "output": output,
            "reason": "nvidia-smi failed (exit %s): %s" % (rc, output.splitlines()[0] if output else "no output")}


def driver_version(nvidia_smi="nvidia-smi", driver_root=DRIVER_ROOT, timeout=30, which=node_commands.which):
    """judge() of the version query, plus 'command' (what ran) - or status 'missing'."""
    located = locate(nvidia_smi, driver_root, which)
    prefix = located[1] if located else None
    if prefix is None:
        return {"status": "missing", "command": None, "output": "",
                "reason": "%s is not installed here (not on PATH%s)" % (
                    nvidia_smi, (", not under the driver root %s" % driver_root) if driver_root
                    and os.sep not in nvidia_smi else "")}
    result = judge(*run(prefix + QUERY, timeout))
    result["command"] = " ".join(prefix + QUERY)
    return result
