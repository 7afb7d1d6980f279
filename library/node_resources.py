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
extends_documentation_fragment: [lab_kube]
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
    description: C(present) sets the amounts, C(absent) removes the resources.
    type: str
    choices: [present, absent]
    default: present
  missing:
    description:
      - What to do when a node in O(names) does not exist.
      - C(fail) stops with the names of the missing nodes.
      - C(report) changes the nodes that exist, returns the others in RV(missing), and waits
        for nothing (create them, then call again).
    type: str
    choices: [fail, report]
    default: fail
  wait_ready:
    description:
      - After setting the amounts, wait until every node in O(names) has condition C(Ready)
        C(True), polling once a second, at most O(wait_timeout) seconds; then fail naming the
        nodes that are not Ready.
    type: bool
    default: false
  wait_timeout:
    description: Seconds O(wait_ready) waits at most.
    type: int
    default: 120
attributes:
  check_mode:
    description: Can run in check mode and report what would change without changing it.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
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

- name: Shape the nodes that exist, say which are missing, wait until all named are Ready
  node_resources:
    kubeconfig: "{{ kubeconfig }}"
    names: [lab-node-0, lab-node-1, lab-node-2]
    resources: {cpu: "8", memory: 32Gi, pods: "110"}
    missing: report
    wait_ready: true
  register: shaped

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
  description: Names in O(names) that are not nodes of the cluster (only with O(missing=report)).
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
not_ready:
  description: Nodes of O(names) without condition Ready=True at the end (with O(wait_ready)).
  returned: success
  type: list
  elements: str
  sample: []
waited:
  description: Seconds spent waiting for Ready.
  returned: success
  type: float
  sample: 0.0
"""

import re  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab_kube import KUBE_ARGS, KubeError, client, condition, parse_quantity  # noqa: E402


def is_extended(name):
    return "/" in name and not name.split("/")[0].endswith("kubernetes.io")


def same_amount(left, right):
    if left is None or right is None:
        return left == right
    try:
        return parse_quantity(left) == parse_quantity(right)
    except ValueError:
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
                parse_quantity(text)
            except ValueError:
                module.fail_json(msg="amount %r for %s is not a Kubernetes quantity (e.g. 8, "
                                 "500m, 32Gi)" % (amount, name))
        resources[name] = text


def summary(node, resources):
    status = node.get("status") or {}
    return {"name": node["metadata"]["name"], "labels": node["metadata"].get("labels") or {},
            "capacity": {r: (status.get("capacity") or {}).get(r) for r in resources},
            "allocatable": {r: (status.get("allocatable") or {}).get(r) for r in resources}}


def main():
    argument_spec = dict(KUBE_ARGS)
    argument_spec.update(
        names=dict(type="list", elements="str", required=True),
        resources=dict(type="dict", required=True),
        fields=dict(type="list", elements="str", choices=["capacity", "allocatable"],
                    default=["capacity", "allocatable"]),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        missing=dict(type="str", choices=["fail", "report"], default="fail"),
        wait_ready=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=120),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    resources = dict(params["resources"])
    if not resources:
        module.fail_json(msg="resources is empty; name at least one resource")
    validate(module, resources, params["state"])
    try:
        kube = client(params["kubeconfig"], params["context"])
        existing = {node["metadata"]["name"]: node for node in kube.items("/api/v1/nodes")}
    except RuntimeError as exc:
        module.fail_json(msg=str(exc))
    except KubeError as exc:
        module.fail_json(msg="cannot list nodes: %s" % exc)

    missing = [name for name in params["names"] if name not in existing]
    if missing and params["missing"] == "fail":
        module.fail_json(msg="node(s) %s not found; the cluster has %d node(s)%s"
                         % (", ".join(missing), len(existing),
                            (": " + ", ".join(sorted(existing)[:10])) if existing else ""))

    report, changed_nodes, before_text, after_text = {}, [], [], []
    for name in params["names"]:
        if name in missing:
            continue
        status = existing[name].get("status") or {}
        patch, node_report = {}, {}
        for field in params["fields"]:
            current = dict(status.get(field) or {})
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
            # the answer is the node as stored: what the cluster now advertises
            existing[name] = kube.patch("/api/v1/nodes/%s/status" % name, {"status": patch})
        except KubeError as exc:
            module.fail_json(msg="cannot patch status of node %s: %s" % (name, exc),
                             changed_nodes=changed_nodes[:-1])

    result = dict(changed=bool(changed_nodes), changed_nodes=changed_nodes, missing=missing,
                  nodes={k: v for k, v in report.items() if v}, not_ready=[], waited=0.0)
    if params["wait_ready"] and not missing and not module.check_mode:
        start = time.monotonic()
        pending = [n for n in params["names"] if condition(existing[n], "Ready").get("status") != "True"]
        while pending:
            if time.monotonic() - start >= params["wait_timeout"]:
                result["not_ready"] = pending
                module.fail_json(msg="%d of %d node(s) not Ready after %ss: %s"
                                 % (len(pending), len(params["names"]), params["wait_timeout"],
                                    ", ".join(pending[:20])), **result)
            time.sleep(1)  # poll interval of a wait bounded by wait_timeout
            try:
                for node in kube.items("/api/v1/nodes"):
                    existing[node["metadata"]["name"]] = node
            except KubeError as exc:
                module.fail_json(msg="cannot list nodes: %s" % exc)
            pending = [n for n in pending if condition(existing[n], "Ready").get("status") != "True"]
        result["waited"] = round(time.monotonic() - start, 1)
    result["cluster_nodes"] = [summary(existing[n], resources) for n in sorted(existing)]
    if module._diff and changed_nodes:
        result["diff"] = {"before": "\n".join(before_text) + "\n",
                          "after": "\n".join(after_text) + "\n"}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
