#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: the driver version nvidia-smi reports on this node, and whether it ran."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_driver_version
short_description: Ask nvidia-smi on a GPU node for the driver version, telling "not installed" from "fails"
description:
  - Runs C(nvidia-smi --query-gpu=driver_version --format=csv,noheader) on the node. nvidia-smi
    is looked up on PATH, then under the GPU Operator's driver root (O(driver_root)) and run there
    by C(chroot), as the Operator's own validator runs it.
  - RV(status) is C(ok) (it ran and printed one driver version), C(failed) (it ran and the driver
    is broken - its output in RV(output)), C(inconclusive) (it ran but says nothing about the
    driver - no permission, chroot not allowed, an unknown query) or C(missing) (not installed).
  - Only a C(failed) run is evidence that the driver is gone; M(gpu_driver_version) never turns a
    missing or inconclusive run into a verdict. Role C(driver_guard) labels a node from it.
  - Only reads; works the same in check mode.
version_added: "1.2.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [nvidia_smi, lab_attributes.read_only]
options:
  timeout:
    description: Seconds nvidia-smi may take (a hung driver is C(inconclusive), not C(failed)).
    type: int
    default: 30
"""

EXAMPLES = r"""
- name: What the driver says on each GPU node
  hosts: gpu_nodes
  become: true
  tasks:
    - name: Ask nvidia-smi (PATH, or the Operator's driver root)
      gpu_driver_version:
      register: driver
    - name: Say it
      ansible.builtin.debug:
        msg: "{{ driver.status }} {{ driver.version | default('') }}: {{ driver.reason }}"
"""

RETURN = r"""
status:
  description: C(ok), C(failed), C(inconclusive) or C(missing).
  returned: always
  type: str
  sample: ok
version:
  description: The driver version (full, e.g. C(550.54.15)); only when RV(status) is C(ok).
  returned: when status is ok
  type: str
  sample: 550.54.15
command:
  description: The command that ran (with C(chroot DRIVER_ROOT) when found under the driver root); null when missing.
  returned: always
  type: str
  sample: /usr/sbin/chroot /run/nvidia/driver nvidia-smi --query-gpu=driver_version --format=csv,noheader
output:
  description: What nvidia-smi printed (stdout, then stderr).
  returned: always
  type: str
  sample: "Failed to initialize NVML: Driver/library version mismatch"
reason:
  description: One sentence on what the run means.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.node import nvidia_smi  # noqa: E402
from ansible.module_utils.node.nvidia_smi import NVIDIA_SMI_ARGS  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            NVIDIA_SMI_ARGS,
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = nvidia_smi.driver_version(p["nvidia_smi"], p["driver_root"], p["timeout"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
