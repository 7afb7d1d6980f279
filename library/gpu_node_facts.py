#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: what a GPU node itself shows - driver, GPUs, running and configured
containerd runtimes, CDI and its specs, kernel Xid lines, Fabric Manager, the plugin socket, the
containers' GPU devices."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_node_facts
short_description: Read a GPU node's driver, GPUs, running containerd config, kernel Xids and plugin socket
description:
  - Runs on the node (over SSH) and returns, as RV(node_facts), what only the node can tell.
    M(gpu_diagnose) takes it as its C(node_facts) (one dict per node name). The node is read by
    the same collector as M(gpu_bundle_node) (each command once, the same options), and the raw
    outputs by the same parsers a support bundle's C(nodes/<node>/) files go through, so a live
    node and a bundle of it give the same facts.
  - C(nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv,noheader)
    (C(driver_ok), C(driver_version), C(gpus), C(driver_error) with nvidia-smi's own
    words when it fails). When nvidia-smi is not on PATH and
    C(DRIVER_ROOT/usr/bin/nvidia-smi) exists (the GPU Operator's driver container), it is run
    as C(chroot DRIVER_ROOT nvidia-smi), as the Operator does.
  - C(crictl --runtime-endpoint ENDPOINT info) - the RUNNING daemon's CRI config
    (C(runtimes_running), C(default_runtime), C(cdi_enabled), C(cdi_spec_dirs)), or its error
    (C(cri_error)); C(containerd [--config F] config dump) - what the files make the NEXT start
    load (C(runtimes_configured), C(default_runtime_configured)); C(restart_pending) when both
    are known and differ.
  - The kernel log's NVRM lines (C(kernel_xid)), Fabric Manager's state where NVSwitches exist
    (C(fabric_manager), from C(systemctl status)), the plugin's C(nvidia-<resource>.sock) names
    (C(device_plugin_sockets)), containerd's error lines (C(containerd_errors)), and the raw
    C(nvidia-smi mig -lgip)/C(-lgipp) text on MIG nodes.
  - The CDI specs in the spec folders (C(cdi_specs) - per spec its file, C(cdiVersion), C(kind), its
    devices and the device nodes each adds; O(cdi_spec_dirs), read under O(host_root)) and, of each
    running container (C(crictl ps), C(crictl inspect)), its Pod, its C(/dev/nvidia*) device nodes and
    the CDI devices its CRI config kept (C(container_devices)) - what a ResourceClaim's container got.
  - A tool that is not installed is not a failure - its keys are left out, and the diagnosis
    says C(unknown)/C(skipped). A tool that runs and fails is reported with its output
    (C(driver_ok=false) with C(driver_error); C(cri_error)).
  - Only reads.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [nvidia_smi, lab_attributes.read_only]
options:
  crictl:
    description: The crictl command (name on PATH or a path).
    type: str
    default: crictl
  runtime_endpoint:
    description:
      - The CRI endpoint for C(crictl --runtime-endpoint) (k3s - C(unix:///run/k3s/containerd/containerd.sock));
        crictl's own default when empty.
      - The same option as M(gpu_bundle_node)'s (whose old name C(crictl_endpoint) is accepted too).
    type: str
    default: unix:///run/containerd/containerd.sock
    aliases: [crictl_endpoint]
  containerd:
    description: The containerd command (name on PATH or a path).
    type: str
    default: containerd
  containerd_config:
    description: Main config file for C(containerd --config FILE config dump); containerd's default when omitted.
    type: path
  containerd_log:
    description:
      - A file with containerd's log (its last O(max_bytes)). Without it, C(journalctl -u)
        O(containerd_unit) C(-b) (this boot) is read when O(journalctl) exists.
    type: path
  containerd_unit:
    description: containerd's systemd unit (its journal, when O(containerd_log) is omitted; empty - no log).
    type: str
    default: containerd
    version_added: "1.4.0"
  journalctl:
    description: The journalctl command (containerd's log, and the kernel log when dmesg cannot be read).
    type: str
    default: journalctl
  dmesg:
    description: The dmesg command.
    type: str
    default: dmesg
  kernel_log:
    description: A file with the kernel log to read instead of running O(dmesg).
    type: path
  systemctl:
    description: The systemctl command (C(systemctl status) of O(fabric_manager_unit)).
    type: str
    default: systemctl
  fabric_manager:
    description:
      - When to ask for Fabric Manager - C(auto) when NVSwitches exist (C(/dev/nvidia-nvswitch*)
        or C(/proc/driver/nvidia-nvswitch/devices/*)), C(always), C(never).
    type: str
    choices: [auto, always, never]
    default: auto
  fabric_manager_unit:
    description: Fabric Manager's systemd unit (NVSwitch systems).
    type: str
    default: nvidia-fabricmanager
    version_added: "1.4.0"
  socket_dir:
    description: The kubelet's device-plugin folder.
    type: path
    default: /var/lib/kubelet/device-plugins
  cdi_spec_dirs:
    description:
      - The CDI spec folders whose C(*.json) and C(*.yaml) specs are read into the compact summary
        C(cdi-specs.json) (per spec - its file, C(cdiVersion), C(kind), its device names and the device
        nodes each adds; at most 64 specs of 1 MiB, 64 devices each) - NVIDIA's DRA driver writes one per
        prepared ResourceClaim, C(/var/run/cdi/k8s.gpu.nvidia.com-claim_<claim uid>.yaml).
      - Empty - the folders the running containerd names (C(crictl info) C(.config.cdiSpecDirs)), else
        CDI's own C(/etc/cdi) and C(/var/run/cdi).
    type: list
    elements: str
    default: []
    version_added: "1.7.0"
  host_root:
    description:
      - Where the node's C(/) is seen from where this runs; the CDI spec folders are read under it
        (a container with the host mounted at C(/host); a node in a mount namespace of its own -
        C(/proc/<pid>/root) of one of its processes). The commands are not affected.
    type: str
    default: /
    version_added: "1.7.0"
  resource:
    description:
      - Resource names whose C(nvidia-<resource>.sock) counts (C(gpu), C(mig-1g.10gb), or with
        the C(nvidia.com/) prefix); any C(nvidia-*.sock) when omitted.
    type: list
    elements: str
  max_bytes:
    description: Largest output kept, in bytes; longer output keeps its end (0 - no limit).
    type: int
    default: 1048576
    version_added: "1.4.0"
  timeout:
    description: Seconds each command may take.
    type: int
    default: 20
"""

EXAMPLES = r"""
- name: What the GPU nodes show
  hosts: gpu_nodes
  become: true
  tasks:
    - name: Read driver, runtimes, kernel, socket
      gpu_node_facts:
      register: node_side

- name: On a k3s node with the GPU Operator's driver container
  gpu_node_facts:
    runtime_endpoint: unix:///run/k3s/containerd/containerd.sock
    containerd_config: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
    driver_root: /run/nvidia/driver
"""

RETURN = r"""
node_facts:
  description:
    - The contract's keys, each only when it could be read - driver_ok, driver_version,
      driver_error, nvidia_smi, gpus, runtimes_running (and its old name runtimes_loaded),
      runtimes_configured, restart_pending, default_runtime, default_runtime_configured,
      cdi_enabled, cdi_spec_dirs, cri_error, containerd_errors, kernel_xid, fabric_manager,
      device_plugin_sockets, device_plugin_socket, mig_lgip, mig_lgipp, runtime_binaries, cdi_specs,
      container_devices.
  returned: success
  type: dict
artefacts:
  description: The raw outputs, keyed by the support bundle's nodes/<node>/ file names (what a bundle of this node would hold).
  returned: success
  type: dict
checks:
  description: What was run and what it gave, per check (command, rc or null when not installed, first lines of output).
  returned: success
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.node import collect as node_collect  # noqa: E402
from ansible.module_utils.node.nvidia_smi import NVIDIA_SMI_ARGS  # noqa: E402
from ansible.module_utils.node.gpu_facts import NodeFactsError, gather  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            NVIDIA_SMI_ARGS,
            resource=dict(type="list", elements="str"),
            **node_collect.argument_spec(
                runtime_endpoint=dict(default="unix:///run/containerd/containerd.sock"),
                containerd_config=dict(type="path", default=None),
                containerd_log=dict(type="path", default=None),
                kernel_log=dict(type="path", default=None),
                socket_dir=dict(type="path"),
                fabric_manager=dict(default="auto"),
                max_bytes=dict(default=1024 * 1024),
                timeout=dict(default=20))),
        supports_check_mode=True,
    )
    try:
        facts, files, checks = gather(module.params)
    except NodeFactsError as exc:
        module.fail_json(msg=str(exc), checks=exc.checks)
    module.exit_json(changed=False, node_facts=facts, artefacts=files, checks=checks)


if __name__ == "__main__":
    main()
