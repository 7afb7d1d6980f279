#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: wait for a Pod's phase or condition; record what the condition says."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pod_wait
short_description: Wait until a Pod reaches a phase or a condition, and record the condition's reason and message
description:
  - Polls one Pod (once a second, at most O(wait_timeout) seconds) until its C(status.phase)
    is O(phase) and/or its condition O(condition.type) has status O(condition.status). On
    timeout it fails and says what the Pod showed last - phase and every condition with its
    reason and message (the scheduler's own words for an unschedulable Pod).
  - With O(record), writes the condition's reason and message, two lines, to that file. A
    recorded observation is evidence - once the file exists it is kept as it is (unless
    O(overwrite)), and the module does not wait again; it reads the Pod once so the result
    shows its state now.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_files.mode, lab_attributes]
options:
  namespace:
    description: Namespace of the Pod.
    type: str
    required: true
  name:
    description: Name of the Pod.
    type: str
    required: true
  phase:
    description: Wait until C(status.phase) is this, e.g. C(Running).
    type: str
    choices: [Pending, Running, Succeeded, Failed, Unknown]
  condition:
    description: Wait until the Pod has this condition with this status.
    type: dict
    suboptions:
      type:
        description: Condition type, e.g. C(PodScheduled) or C(Ready).
        type: str
        required: true
      status:
        description: Wanted status of the condition.
        type: str
        choices: ["True", "False", "Unknown"]
        default: "True"
  wait_timeout:
    description: Seconds to wait at most. C(0) reads once and fails if the Pod is not there yet.
    type: int
    default: 60
  record:
    description: Write the O(condition)'s reason and message here (two lines). Needs O(condition).
    type: path
  overwrite:
    description: Replace an existing O(record) whose content differs (a backup is kept).
    type: bool
    default: false
attributes:
  check_mode:
    details:
      - Reads as usual and does not write O(record).
      - With a O(record) still to write it does not wait (nothing was changed to wait for) and
        says what a real run would record.
  diff_mode:
    details: The recorded file's before and after.
"""

EXAMPLES = r"""
- name: Wait for the scheduler's verdict and record it once
  pod_wait:
    kubeconfig: "{{ kubeconfig }}"
    namespace: gpu-lab
    name: cuda-probe
    condition: {type: PodScheduled, status: "False"}
    wait_timeout: 60
    record: /root/gpuop/out/unscheduled.txt

- name: Wait until the Pod runs
  pod_wait:
    kubeconfig: "{{ kubeconfig }}"
    namespace: gpu-lab
    name: cuda-probe
    phase: Running
"""

RETURN = r"""
msg:
  description: The condition's reason and message (or the phase), in one line; with a kept record, what the Pod shows now.
  returned: success
  type: str
  sample: "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. ..."
phase:
  description: The Pod's phase at the last read.
  returned: success
  type: str
  sample: Pending
condition:
  description: The condition named in O(condition) at the last read (empty when it has none).
  returned: when condition is given
  type: dict
  sample: {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
           "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}
conditions:
  description: All the Pod's conditions at the last read.
  returned: success
  type: list
  elements: dict
waited:
  description: Seconds spent waiting.
  returned: success
  type: float
  sample: 1.2
recorded:
  description: The text of O(record) after this call - the earlier observation when it was kept.
  returned: when record is given
  type: str
  sample: "Unschedulable\n0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n"
kept_existing:
  description: True when O(record) existed and was kept (nothing was waited for).
  returned: when record exists and overwrite is false
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab.files import LabFileError  # noqa: E402
from ansible.module_utils.kube.client import KubeconfigError, kube_args  # noqa: E402
from ansible.module_utils.kube.pods import PodWaitError, wait_pod  # noqa: E402


def main():
    spec = kube_args(
        namespace=dict(type="str", required=True),
        name=dict(type="str", required=True),
        phase=dict(type="str", choices=["Pending", "Running", "Succeeded", "Failed", "Unknown"]),
        condition=dict(type="dict", options=dict(
            type=dict(type="str", required=True),
            status=dict(type="str", choices=["True", "False", "Unknown"], default="True"))),
        wait_timeout=dict(type="int", default=60),
        record=dict(type="path"),
        overwrite=dict(type="bool", default=False),
        mode=dict(type="str", default="0644"),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True,
                           required_one_of=[("phase", "condition")],
                           required_by={"record": "condition"})
    try:
        result = wait_pod(module)
    except (PodWaitError, LabFileError, KubeconfigError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
