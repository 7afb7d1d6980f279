#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: set resources in nodes' status (what a device plugin does)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_resources
short_description: Set or remove resources in the status of Kubernetes nodes
description:
  - Writes resource amounts into C(status.capacity) and C(status.allocatable) of nodes
    through the C(status) subresource - what a device plugin and the kubelet do for
    C(nvidia.com/gpu) on a real node. A plain patch of a Node leaves its status alone, and
    kubernetes.core cannot patch a subresource, hence this module.
  - One call handles any number of nodes (one list, one patch per node that differs).
  - Reports C(changed) only for the nodes whose amounts differ (quantities compared by value,
    so C(32Gi) equals C(34359738368)).
  - On a kwok cluster the amounts stay as written; on a real node the kubelet rewrites
    capacity from what its device plugins report, so use this there only for rehearsals.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_attributes]
options:
  names:
    description: Names of the nodes to change. Every one must exist.
    type: list
    elements: str
    required: true
  resources:
    description:
      - Resource name to amount, e.g. C(nvidia.com/gpu) to C("4"), or C(cpu) to C("8") and C(memory) to C(32Gi).
      - Extended resources (a name with a C(/) outside C(kubernetes.io/)) take whole numbers
        only. Other resources take Kubernetes quantities.
      - With O(state=absent) only the names matter.
    type: dict
    required: true
  fields:
    description: Which status maps to write.
    type: list
    elements: str
    choices: [capacity, allocatable]
    default: [capacity, allocatable]
  state:
    description:
      - C(present) sets the amounts, C(absent) removes the resources.
      - C(posted) writes nothing and waits (up to O(wait_timeout)) until the nodes' own kubelets
        post the amounts in O(fields) - a real node whose device plugin registered; it fails naming
        what each node posts instead. In check mode it only looks (RV(not_posted)).
    type: str
    choices: [present, absent, posted]
    default: present
  missing:
    description:
      - What to do when a node in O(names) does not exist.
      - C(fail) stops with the names of the missing nodes.
      - C(report) changes the nodes that exist, returns the others in RV(missing), and waits
        for nothing (create them, then call again).
      - C(create) creates them from O(template) (a fake node for kwok, say), with the amounts
        of O(resources) already in their status, and then treats them like the others.
        Creation is the one thing this module does to a node outside its status.
    type: str
    choices: [fail, report, create]
    default: fail
  template:
    description:
      - With O(missing=create), the Node every missing node is made from. The module sets
        C(metadata.name) and the label C(kubernetes.io/hostname) to the node's name (what a
        kubelet registers), C(apiVersion) v1 and C(kind) Node, and puts O(resources) into
        the status fields named in O(fields).
      - A Node's status is kept on creation (a kubelet registers its node with it), so a kwok
        node is created with its capacity in one call.
    type: dict
  workers:
    description:
      - Connections to the API server used at once for creating and patching many nodes. A
        fleet of thousands is bound by round trips; more than the API server can serve
        only queues. C(1) makes one call after the other.
    type: int
    default: 8
  wait_ready:
    description:
      - After setting the amounts, wait until every node in O(names) has condition C(Ready)
        C(True) - one list, then a watch, so a fleet is not listed over and over - at most
        O(wait_timeout) seconds; then fail naming the nodes that are not Ready.
    type: bool
    default: false
  wait_timeout:
    description: Seconds O(wait_ready), or O(state=posted), waits at most.
    type: int
    default: 120
attributes:
  diff_mode:
    details: Shows each changed node's amounts before and after.
"""

EXAMPLES = r"""
- name: Advertise four GPUs on lab-node-0, as a device plugin would
  node_resources:
    kubeconfig: ~/.kwok/clusters/gpu-incident-lab/kubeconfig.yaml
    names: [lab-node-0]
    resources:
      nvidia.com/gpu: "4"

- name: Shape many fake nodes at once
  node_resources:
    kubeconfig: "{{ kubeconfig }}"
    names: "{{ groups['fleet'] }}"
    resources: {cpu: "8", memory: 32Gi, pods: "110"}

- name: Shape the nodes that exist, say which are missing, wait until all named are Ready
  node_resources:
    kubeconfig: "{{ kubeconfig }}"
    names: [lab-node-0, lab-node-1, lab-node-2]
    resources: {cpu: "8", memory: 32Gi, pods: "110"}
    missing: report
    wait_ready: true
  register: shaped

- name: Create the fake nodes that are missing (kwok), shape all, wait until all are Ready
  node_resources:
    kubeconfig: "{{ kubeconfig }}"
    names: "{{ range(1000) | map('string') | map('regex_replace', '^', 'lab-node-') | list }}"
    resources: {cpu: "8", memory: 32Gi, pods: "110"}
    missing: create
    template:
      metadata:
        annotations: {kwok.x-k8s.io/node: fake}
        labels: {type: kwok}
    wait_ready: true

- name: Take the GPUs away again (the driver vanished after a kernel update)
  node_resources:
    kubeconfig: "{{ kubeconfig }}"
    names: [lab-node-0]
    resources: {nvidia.com/gpu: ""}
    state: absent
"""

RETURN = r"""
changed_nodes:
  description: Names of the nodes whose status was (or, in check mode, would be) changed.
  returned: success
  type: list
  elements: str
  sample: [lab-node-0]
nodes:
  description: For each node, each field and resource, the amount before and after.
  returned: success
  type: dict
  sample: {"lab-node-0": {"capacity": {"nvidia.com/gpu": {"before": null, "after": "4"}}}}
missing:
  description:
    - Names in O(names) that are not nodes of the cluster (only with O(missing=report)); with
      O(missing=create), the ones check mode would create.
  returned: success
  type: list
  elements: str
  sample: [lab-node-2]
cluster_nodes:
  description:
    - Every node of the cluster (not only O(names)) with its labels and, for the resources named
      in O(resources), the amounts in capacity and allocatable as they are after this call -
      read back from the API server's answers, never assumed. C(null) where a node has none.
  returned: success
  type: list
  elements: dict
  sample: [{"name": "lab-node-0", "labels": {"type": "kwok"},
            "capacity": {"nvidia.com/gpu": "4"}, "allocatable": {"nvidia.com/gpu": "4"}}]
created:
  description: Names of the nodes created (or, in check mode, that would be) with O(missing=create).
  returned: success
  type: list
  elements: str
  sample: [lab-node-2]
not_ready:
  description: Nodes of O(names) without condition Ready=True at the end (with O(wait_ready)).
  returned: success
  type: list
  elements: str
  sample: []
not_posted:
  description: With O(state=posted) in check mode, the nodes of O(names) that do not post the amounts yet.
  returned: when O(state=posted) in check mode
  type: list
  elements: str
  sample: [lab-node-1]
waited:
  description: Seconds spent waiting for Ready.
  returned: success
  type: float
  sample: 0.0
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.kube.client import KubeconfigError, KubeError, kube_args  # noqa: E402
from ansible.module_utils.kube.nodes import NodeStatusError, shape_nodes  # noqa: E402


def main():
    argument_spec = kube_args(
        names=dict(type="list", elements="str", required=True),
        resources=dict(type="dict", required=True),
        fields=dict(type="list", elements="str", choices=["capacity", "allocatable"],
                    default=["capacity", "allocatable"]),
        state=dict(type="str", choices=["present", "absent", "posted"], default="present"),
        missing=dict(type="str", choices=["fail", "report", "create"], default="fail"),
        template=dict(type="dict"),
        workers=dict(type="int", default=8),
        wait_ready=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=120),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        result = shape_nodes(module.params, check_mode=module.check_mode, diff=module._diff)
    except NodeStatusError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    except (KubeconfigError, KubeError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
