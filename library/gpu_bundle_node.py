#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: a GPU node's own side of a support bundle (runs on the node, reads only)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_bundle_node
short_description: Collect a GPU node's side of a support bundle - nvidia-smi, crictl info, containerd, logs, dmesg
description:
  - Runs on the node (over SSH, C(become) for dmesg, the journal and the driver root) and returns
    the node files of a support bundle, named as in the bundle's C(nodes/<node>/) folder -
    C(nvidia-smi.txt), C(nvidia-smi-query.csv), C(crictl-info.json), C(containerd-config-dump.toml),
    C(containerd.log), C(kubelet.log), C(device-plugins.txt), C(dmesg.txt), C(fabric-manager.txt),
    C(mig-lgip.txt), C(mig-lgipp.txt), and two small summaries made on the node - C(cdi-specs.json)
    (the CDI specs of O(cdi_spec_dirs)) and C(container-devices.json) (each running container's Pod,
    its C(/dev/nvidia*) device nodes and the CDI devices its CRI config kept, from C(crictl ps) and
    C(crictl inspect)). M(gpu_bundle_collect) on the controller writes them.
  - What it returns is already redacted, on the node - the built-in rules and O(redact), as
    M(gpu_bundle_collect) applies them - so no secret of the node's files (registry credentials in
    C(crictl info) and C(config dump), tokens in the logs) travels to the controller;
    RV(redactions) counts what was hidden, per file and rule. A bad rule is refused before
    anything runs.
  - It writes nothing on the node. A tool that is not installed gives no file and an RV(index)
    entry C(missing) with the reason; a command that ran and failed gives no file (except
    C(nvidia-smi.txt) and C(fabric-manager.txt), whose words are the evidence either way) and an
    entry C(failed) with its exit code and output.
  - The same collector as M(gpu_node_facts) (each command once, the same option names), so what
    M(gpu_diagnose) reads from these files is what M(gpu_node_facts) reports on this node.
  - nvidia-smi is looked up on PATH, then under the GPU Operator's driver root and run there by
    chroot. C(crictl info) is what the running containerd holds; C(containerd config dump) is what
    its files make the next start load.
version_added: "1.2.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [nvidia_smi, lab_attributes.read_only]
options:
  crictl:
    description: The crictl command.
    type: str
    default: crictl
  runtime_endpoint:
    description:
      - CRI endpoint for C(crictl --runtime-endpoint) (e.g. C(unix:///run/k3s/containerd/containerd.sock));
        crictl's own default when empty.
      - The same option as M(gpu_node_facts)'s. Its old name C(crictl_endpoint) is accepted, with
        a deprecation warning, until 2.0.0.
    type: str
    default: ""
    aliases: [crictl_endpoint]
  containerd:
    description: The containerd command.
    type: str
    default: containerd
  containerd_config:
    description: Main config for C(containerd --config FILE config dump); containerd's default when empty.
    type: str
    default: ""
  containerd_log:
    description: A file holding containerd's log; empty - C(journalctl -u) O(containerd_unit).
    type: str
    default: ""
  containerd_unit:
    description: containerd's systemd unit (its journal, when O(containerd_log) is empty; empty - no log).
    type: str
    default: containerd
  kubelet_log:
    description: A file holding the kubelet's log; empty - C(journalctl -u) O(kubelet_unit).
    type: str
    default: ""
  kubelet_unit:
    description: The kubelet's systemd unit (empty - no log).
    type: str
    default: kubelet
  journalctl:
    description: The journalctl command (the logs of O(containerd_unit) and O(kubelet_unit), and the kernel log when dmesg cannot be read).
    type: str
    default: journalctl
    version_added: "1.4.0"
  dmesg:
    description: The dmesg command.
    type: str
    default: dmesg
    version_added: "1.4.0"
  kernel_log:
    description: A file with the kernel log to read instead of running O(dmesg) (empty - O(dmesg)).
    type: str
    default: ""
    version_added: "1.4.0"
  socket_dir:
    description: The kubelet's device-plugin folder.
    type: str
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
  systemctl:
    description: The systemctl command (C(systemctl status) of O(fabric_manager_unit)).
    type: str
    default: systemctl
    version_added: "1.4.0"
  fabric_manager:
    description:
      - When to ask for Fabric Manager - C(always), C(auto) only when NVSwitches exist
        (C(/dev/nvidia-nvswitch*) or C(/proc/driver/nvidia-nvswitch/devices/*)), C(never).
      - A unit that is not installed gives no file (an RV(index) entry C(missing)), except where
        NVSwitches exist - there its absence is the evidence.
    type: str
    choices: [auto, always, never]
    default: always
    version_added: "1.4.0"
  fabric_manager_unit:
    description: Fabric Manager's systemd unit (NVSwitch systems).
    type: str
    default: nvidia-fabricmanager
  max_bytes:
    description: Largest file kept, in bytes; longer output keeps its end (0 - no limit).
    type: int
    default: 8388608
  timeout:
    description: Seconds each command may take.
    type: int
    default: 60
  node_name:
    description: The Kubernetes node name (the bundle's C(nodes/<node>/)); it lets O(redact[].files) globs name this node's files.
    type: str
    default: ""
  redact:
    description:
      - Redaction rules of your own, as M(gpu_bundle_collect)'s option C(redact)
        (give both the same list); added to the built-in ones.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The rule's name in the report.
        type: str
      literal:
        description: A fixed string to hide (at least 4 characters).
        type: str
      regex:
        description: A Python regular expression (its group C(mask) only, when it has one).
        type: str
      files:
        description: Globs of bundle paths (C(nodes/*/kubelet.log)); every file when omitted.
        type: list
        elements: str
"""

EXAMPLES = r"""
- name: The node side of a support bundle
  hosts: gpu_nodes
  become: true
  tasks:
    - name: Collect it (k3s - its own containerd socket and config)
      gpu_bundle_node:
        runtime_endpoint: unix:///run/k3s/containerd/containerd.sock
        containerd_config: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
        containerd_unit: k3s-agent
        node_name: "{{ inventory_hostname }}"
        redact:
          - name: license-server
            literal: lic-7f3a9c2e1b
      register: node_side
"""

RETURN = r"""
files:
  description: File name -> its content, base64-encoded (exact bytes); only the files collected.
  returned: success
  type: dict
index:
  description: File name -> {status (collected, missing, failed, skipped), command, rc, reason, output}.
  returned: success
  type: dict
redactions:
  description: What was hidden here - C(files) (file name -> {rule -> values hidden}) and C(index) ({rule -> values hidden} in RV(index)).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.node import collect as node_collect  # noqa: E402
from ansible.module_utils.node.nvidia_smi import NVIDIA_SMI_ARGS  # noqa: E402
from ansible.module_utils.bundle import contents  # noqa: E402
from ansible.module_utils.bundle import node_side  # noqa: E402
from ansible.module_utils.lab.refusals import LabError  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            NVIDIA_SMI_ARGS,
            kubelet_log=dict(type="str", default=""),
            kubelet_unit=dict(type="str", default="kubelet"),
            node_name=dict(type="str", default=""),
            redact=dict(type="list", elements="dict", default=[], options=contents.REDACT_RULE_OPTIONS),
            **node_collect.argument_spec()),
        supports_check_mode=True,
    )
    try:
        result = node_side.node_result(module.params)
    except LabError as exc:   # BundleError: a redaction rule that cannot be used
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
