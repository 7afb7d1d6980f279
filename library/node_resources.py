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
author: gpu-incident-lab contributors
options:
  kubeconfig:
    description: Path of the kubeconfig to use.
    type: path
    required: true
  context:
    description: Context in the kubeconfig; its current context when omitted.
    type: str
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
    description: C(present) sets the amounts, C(absent) removes the resources.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
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
"""

import re  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab_kube import KUBE_ARGS, api_client, api_error_text  # noqa: E402


def is_extended(name):
    return "/" in name and not name.split("/")[0].endswith("kubernetes.io")


def same_amount(left, right):
    if left is None or right is None:
        return left == right
    try:
        from kubernetes.utils import parse_quantity
        return parse_quantity(str(left)) == parse_quantity(str(right))
    except (ValueError, ImportError):
        return str(left) == str(right)


def validate(module, resources, state):
    for name, amount in resources.items():
        if not re.match(r"^([A-Za-z0-9.-]+/)?[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$", name):
            module.fail_json(msg="resource name %r is not a valid Kubernetes resource name" % name)
        if state == "absent":
            continue
        text = str(amount).strip()
        if is_extended(name):
            if not re.fullmatch(r"[0-9]+", text):
                module.fail_json(msg="amount %r for extended resource %s is not a whole number; "
                                 "extended resources are counted in integers, e.g. \"4\""
                                 % (amount, name))
        else:
            try:
                from kubernetes.utils import parse_quantity
                parse_quantity(text)
            except ValueError:
                module.fail_json(msg="amount %r for %s is not a Kubernetes quantity (e.g. 8, "
                                 "500m, 32Gi)" % (amount, name))
        resources[name] = text


def main():
    argument_spec = dict(KUBE_ARGS)
    argument_spec.update(
        names=dict(type="list", elements="str", required=True),
        resources=dict(type="dict", required=True),
        fields=dict(type="list", elements="str", choices=["capacity", "allocatable"],
                    default=["capacity", "allocatable"]),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    resources = dict(params["resources"])
    if not resources:
        module.fail_json(msg="resources is empty; name at least one resource")
    validate(module, resources, params["state"])
    try:
        from kubernetes import client
        from kubernetes.client.rest import ApiException
        core = client.CoreV1Api(api_client(params["kubeconfig"], params["context"]))
        existing = {node.metadata.name: node for node in core.list_node().items}
    except RuntimeError as exc:
        module.fail_json(msg=str(exc))
    except ApiException as exc:
        module.fail_json(msg="cannot list nodes: %s" % api_error_text(exc))
    except Exception as exc:
        module.fail_json(msg="cannot reach the API server of %s: %s" % (params["kubeconfig"], exc))

    missing = [name for name in params["names"] if name not in existing]
    if missing:
        module.fail_json(msg="node(s) %s not found; the cluster has %d node(s)%s"
                         % (", ".join(missing), len(existing),
                            (": " + ", ".join(sorted(existing)[:10])) if existing else ""))

    report, changed_nodes, before_text, after_text = {}, [], [], []
    for name in params["names"]:
        status = existing[name].status
        patch, node_report = {}, {}
        for field in params["fields"]:
            current = dict(getattr(status, field) or {})
            for resource, amount in resources.items():
                want = None if params["state"] == "absent" else amount
                have = current.get(resource)
                if same_amount(have, want):
                    continue
                patch.setdefault(field, {})[resource] = want
                node_report.setdefault(field, {})[resource] = {"before": have, "after": want}
        report[name] = node_report
        if not patch:
            continue
        changed_nodes.append(name)
        before_text.append("%s: %s" % (name, {f: {r: v["before"] for r, v in rs.items()}
                                              for f, rs in node_report.items()}))
        after_text.append("%s: %s" % (name, {f: {r: v["after"] for r, v in rs.items()}
                                             for f, rs in node_report.items()}))
        if module.check_mode:
            continue
        try:
            core.patch_node_status(name, {"status": patch})
        except ApiException as exc:
            module.fail_json(msg="cannot patch status of node %s: %s" % (name, api_error_text(exc)),
                             changed_nodes=changed_nodes[:-1])

    result = dict(changed=bool(changed_nodes), changed_nodes=changed_nodes,
                  nodes={k: v for k, v in report.items() if v})
    if module._diff and changed_nodes:
        result["diff"] = {"before": "\n".join(before_text) + "\n",
                          "after": "\n".join(after_text) + "\n"}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
