#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: what a GPU node itself shows - driver, loaded runtimes, plugin socket."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_node_facts
short_description: Read a GPU node's driver, loaded containerd runtimes and device-plugin socket
description:
  - Runs on the node (over SSH) and returns, as RV(node_facts), what only the node can tell -
    whether C(nvidia-smi) works and the driver version, which runtimes C(containerd config
    dump) lists (what containerd loads, not what a file says), and whether a device-plugin
    socket sits in the kubelet's folder. M(gpu_diagnose) takes it as its C(node_facts).
  - A tool that is not installed is reported, not fatal - RV(node_facts) then leaves that key
    out, and the diagnosis marks the layer C(skipped) instead of guessing.
  - Only reads; C(config dump) is a separate process that re-reads the files (it shows what the
    next start loads; C(crictl info) shows what the running daemon holds).
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
options:
  nvidia_smi:
    description: The nvidia-smi command (name on PATH or a path).
    type: str
    default: nvidia-smi
  containerd:
    description: The containerd command (name on PATH or a path).
    type: str
    default: containerd
  containerd_config:
    description: Main config file for C(containerd --config FILE config dump); containerd's default when omitted.
    type: path
  socket_dir:
    description: The kubelet's device-plugin folder.
    type: path
    default: /var/lib/kubelet/device-plugins
  timeout:
    description: Seconds each command may take.
    type: int
    default: 20
attributes:
  check_mode:
    description: Can run in check mode and report what would change without changing it.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
    support: none
"""

EXAMPLES = r"""
- name: What the GPU nodes show
  hosts: gpu_nodes
  become: true
  tasks:
    - name: Read driver, runtimes, socket
      gpu_node_facts:
      register: node_side
"""

RETURN = r"""
node_facts:
  description: driver_ok, driver_version, runtimes_loaded, device_plugin_socket - each only when it could be read.
  returned: success
  type: dict
checks:
  description: What was run and what it gave, per check (command, rc, first line of output or error).
  returned: success
  type: list
  elements: dict
"""

import glob  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.gpu_layers import runtimes_from_dump  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            containerd=dict(type="str", default="containerd"),
            containerd_config=dict(type="path"),
            socket_dir=dict(type="path", default="/var/lib/kubelet/device-plugins"),
            timeout=dict(type="int", default=20),
        ),
        supports_check_mode=True,
    )
    p = module.params
    facts, checks = {}, []

    def run(argv):
        path = module.get_bin_path(argv[0]) if os.sep not in argv[0] else argv[0]
        if not path or not os.access(path, os.X_OK):
            checks.append({"command": " ".join(argv), "rc": None, "output": "not found"})
            return None
        rc, out, err = module.run_command([path] + argv[1:], check_rc=False)
        checks.append({"command": " ".join(argv), "rc": rc,
                       "output": (out or err or "").strip().splitlines()[:1]})
        return rc, out, err

    smi = run([p["nvidia_smi"], "--query-gpu=driver_version", "--format=csv,noheader"])
    if smi is not None:
        rc, out, _err = smi
        versions = [v.strip() for v in out.splitlines() if v.strip()]
        facts["driver_ok"] = rc == 0 and bool(versions)
        if facts["driver_ok"]:
            facts["driver_version"] = versions[0]
    dump_cmd = [p["containerd"]] + (["--config", p["containerd_config"]] if p["containerd_config"]
                                    else []) + ["config", "dump"]
    dump = run(dump_cmd)
    if dump is not None and dump[0] == 0:
        facts["runtimes_loaded"] = runtimes_from_dump(dump[1])
    if os.path.isdir(p["socket_dir"]):
        sockets = [s for s in glob.glob(os.path.join(p["socket_dir"], "*.sock"))
                   if os.path.basename(s) != "kubelet.sock"]
        facts["device_plugin_socket"] = bool(sockets)
        checks.append({"command": "ls %s/*.sock" % p["socket_dir"], "rc": 0,
                       "output": [os.path.basename(s) for s in sockets]})
    else:
        checks.append({"command": "ls %s" % p["socket_dir"], "rc": None, "output": "no such folder"})
    module.exit_json(changed=False, node_facts=facts, checks=checks)


if __name__ == "__main__":
    main()
