#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: a Node's conditions from the Node object; wait for statuses; the gate's verdict."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_conditions
short_description: Read a Node's conditions (e.g. the sentinel's RuntimeBreaksOnRestart), wait for statuses, say which refuse
description:
  - Reads the conditions O(types) of Node O(name) from the API server - no SSH to the node. A
    type the Node does not carry is returned with status C(Absent).
  - With O(wait_for), polls once a second, at most O(wait_timeout) seconds, until every named
    type has the wanted status; on timeout it fails and says what the Node showed last.
  - With O(refuse_on), returns in RV(refused) the types whose condition has the status given
    there - the gate of a drain-and-reboot play (role runtime_restart_gate) fails on them.
  - The sentinel (role runtime_sentinel, node-problem-detector) posts C(RuntimeRestartPending)
    and C(RuntimeBreaksOnRestart).
version_added: "1.6.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_attributes.read_only]
options:
  name:
    description: The Node.
    type: str
    required: true
  types:
    description: Condition types to read.
    type: list
    elements: str
    default: [RuntimeRestartPending, RuntimeBreaksOnRestart]
  wait_for:
    description: "Wait until each of these condition types has this status: C(True), C(False), C(Unknown) or C(Absent)."
    type: dict
  wait_timeout:
    description: Seconds to wait at most for O(wait_for). C(0) reads once.
    type: int
    default: 60
  refuse_on:
    description: 'Condition types and the status that refuses, e.g. C({"RuntimeBreaksOnRestart": "True"}); they are returned in RV(refused).'
    type: dict
attributes:
  check_mode:
    details: Reads as in a normal run (it changes nothing either way).
"""

EXAMPLES = r"""
- name: Wait until the sentinel says the node will break at its next restart
  node_conditions:
    kubeconfig: "{{ kubeconfig }}"
    name: lab-node-1
    wait_for: {RuntimeBreaksOnRestart: "True", RuntimeRestartPending: "True"}
    wait_timeout: 60

- name: Which conditions refuse a reboot
  node_conditions:
    kubeconfig: "{{ kubeconfig }}"
    name: gpu-node-7
    refuse_on: {RuntimeBreaksOnRestart: "True"}
  register: gate
"""

RETURN = r"""
conditions:
  description: Each type read, with status (C(Absent) when the Node has none of that type), reason, message and lastTransitionTime.
  returned: success
  type: dict
  sample: {"RuntimeBreaksOnRestart": {"status": "True", "reason": "NextStartServesNoCRI",
           "message": "next start of containerd 1.6.20 serves no CRI: ...", "lastTransitionTime": "2026-12-05T03:26:43Z"}}
refused:
  description: The types of O(refuse_on) whose condition has the refusing status.
  returned: success
  type: list
  elements: str
  sample: [RuntimeBreaksOnRestart]
waited:
  description: Seconds spent waiting.
  returned: success
  type: float
msg:
  description: One line - each condition's status and message.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.kube.client import KubeconfigError, kube_args  # noqa: E402
from ansible.module_utils.kube.node_conditions import NodeConditionsError, run  # noqa: E402


def main():
    spec = kube_args(
        name=dict(type="str", required=True),
        types=dict(type="list", elements="str", default=["RuntimeRestartPending", "RuntimeBreaksOnRestart"]),
        wait_for=dict(type="dict"),
        wait_timeout=dict(type="int", default=60),
        refuse_on=dict(type="dict"),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    try:
        result = run(module.params)
    except (NodeConditionsError, KubeconfigError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
