#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: a Node's conditions from the Node object; wait for statuses; the gate's verdict."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_conditions
short_description: A Node's conditions (e.g. the sentinel's RuntimeBreaksOnRestart) - wait, refuse, or every Node as a table
description:
  - Reads the conditions O(types) of Node O(name) from the API server - no SSH to the node. A
    type the Node does not carry is returned with status C(Absent).
  - With O(wait_for), polls once a second, at most O(wait_timeout) seconds, until every named
    type has the wanted status; on timeout it fails and says what the Node showed last.
  - With O(refuse_on), returns in RV(refused) the types whose condition has the status given
    there - the gate of a drain-and-reboot play (role runtime_restart_gate) fails on them.
  - Without O(name), every Node (page by page, O(label_selector)) - the cluster's answer to
    "which nodes break at their next reboot" as RV(table), those with C(RuntimeBreaksOnRestart=True) first.
  - With O(post), writes those conditions on the named Nodes' status first (only where they
    differ) - stand-ins for nodes that run no sentinel, such as kwok nodes; say so in the message.
  - The sentinel (role runtime_sentinel, node-problem-detector) posts C(RuntimeRestartPending)
    and C(RuntimeBreaksOnRestart).
version_added: "1.6.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_attributes]
options:
  name:
    description: The Node. Without it, every Node (RV(nodes), RV(table)); O(wait_for) and O(refuse_on) need it.
    type: str
  label_selector:
    description: Without O(name), only the Nodes this selects.
    type: str
  post:
    description: Conditions to write on Nodes' status first, each C(name), C(type), C(status), C(reason), C(message).
    type: list
    elements: dict
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
    details: Reads as in a normal run; O(post) says which Nodes it would write and writes nothing.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Wait until the sentinel says the node will break at its next restart
  node_conditions:
    kubeconfig: "{{ kubeconfig }}"
    name: lab-node-1
    wait_for: {RuntimeBreaksOnRestart: "True", RuntimeRestartPending: "True"}
    wait_timeout: 60

- name: Which nodes break at their next reboot, cluster-wide
  node_conditions:
    kubeconfig: "{{ kubeconfig }}"
  register: fleet

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
  returned: when name is given
  type: dict
  sample: {"RuntimeBreaksOnRestart": {"status": "True", "reason": "NextStartServesNoCRI",
           "message": "next start of containerd 1.6.20 serves no CRI: ...", "lastTransitionTime": "2026-12-05T03:26:43Z"}}
refused:
  description: The types of O(refuse_on) whose condition has the refusing status.
  returned: when name is given
  type: list
  elements: str
  sample: [RuntimeBreaksOnRestart]
waited:
  description: Seconds spent waiting.
  returned: when name is given
  type: float
nodes:
  description: Without O(name), every Node with its conditions, those that break first.
  returned: when name is not given
  type: list
  elements: dict
table:
  description: Without O(name), a count line and a Markdown table of the nodes whose conditions are not False.
  returned: when name is not given
  type: str
posted:
  description: The Nodes O(post) wrote (in check mode, would write).
  returned: success
  type: list
  elements: str
msg:
  description: One line - each condition's status and message (without O(name), the count line).
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.kube.client import KubeconfigError, kube_args  # noqa: E402
from ansible.module_utils.kube.node_conditions import NodeConditionsError, run  # noqa: E402


def main():
    spec = kube_args(
        name=dict(type="str"),
        label_selector=dict(type="str"),
        post=dict(type="list", elements="dict"),
        types=dict(type="list", elements="str", default=["RuntimeRestartPending", "RuntimeBreaksOnRestart"]),
        wait_for=dict(type="dict"),
        wait_timeout=dict(type="int", default=60),
        refuse_on=dict(type="dict"),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True,
                           required_by={"wait_for": "name", "refuse_on": "name"})
    try:
        result = run(module.params, module.check_mode)
    except (NodeConditionsError, KubeconfigError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
