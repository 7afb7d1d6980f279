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
    description: Seconds O(wait_ready) waits at most.
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
waited:
  description: Seconds spent waiting for Ready.
  returned: success
  type: float
  sample: 0.0
"""

import copy  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab_kube import KUBE_ARGS, KubeconfigError, KubeError, client, condition, parse_quantity  # noqa: E402


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


def node_body(template, name, resources, fields):
    """The Node to create: the template with the name, hostname label and amounts set."""
    body = copy.deepcopy(template)
    body["apiVersion"], body["kind"] = "v1", "Node"
    metadata = body.setdefault("metadata", {})
    metadata["name"] = name
    metadata.setdefault("labels", {})["kubernetes.io/hostname"] = name
    status = body.setdefault("status", {})
    for field in fields:
        status.setdefault(field, {}).update(resources)
    return body


def is_ready(node):
    return condition(node, "Ready").get("status") == "True"


def wait_ready(kube, names, existing, timeout, clock=time.monotonic):
    """Wait until every node of `names` is Ready: one list, then a watch from its version
    (events only for what changes - a fleet of thousands is not listed again and again).
    Updates `existing`; returns (names still not Ready, seconds waited)."""
    start = clock()
    pending = [n for n in names if not is_ready(existing.get(n) or {})]
    version = None
    while pending and clock() - start < timeout:
        if version is None:  # (re)list: at the start, and when the watch's version is gone
            nodes, version = kube.listing("/api/v1/nodes")
            existing.update((node["metadata"]["name"], node) for node in nodes)
            pending = [n for n in pending if not is_ready(existing.get(n) or {})]
            continue
        waiting = set(pending)
        events = kube.watch("/api/v1/nodes", version, min(60, timeout - (clock() - start)))
        try:
            for kind, node in events:
                version = (node.get("metadata") or {}).get("resourceVersion") or version
                if kind in ("ADDED", "MODIFIED"):
                    name = node["metadata"]["name"]
                    existing[name] = node
                    if name in waiting and is_ready(node):
                        waiting.discard(name)
                if not waiting or clock() - start >= timeout:
                    break
        except KubeError as exc:
            if exc.status != 410:
                raise
            version = None  # too old to watch from: list again
        finally:
            events.close()
        pending = [n for n in pending if n in waiting]
    return pending, round(clock() - start, 1)


def check_template(module, template):
    """A template the API server would take as a Node, or a plain refusal naming the field."""
    if template is None:
        module.fail_json(msg="missing=create needs template: the Node each missing node is "
                             "made from (at least {metadata: {annotations: {kwok.x-k8s.io/node: fake}}} "
                             "for a kwok node)")
    if template.get("kind", "Node") != "Node" or template.get("apiVersion", "v1") != "v1":
        module.fail_json(msg="template is a %s %s; it must be a Node (apiVersion v1), or leave "
                             "kind and apiVersion out" % (template.get("apiVersion"), template.get("kind")))
    for key in ("metadata", "spec", "status"):
        if not isinstance(template.get(key, {}), dict):
            module.fail_json(msg="template.%s is a %s; it must be a mapping"
                                 % (key, type(template[key]).__name__))
    metadata = template.get("metadata") or {}
    for key in ("labels", "annotations"):
        value = metadata.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            module.fail_json(msg="template.metadata.%s must map names to strings (quote numbers "
                                 "and booleans: \"true\")" % key)
    if "name" in metadata or "generateName" in metadata:
        module.fail_json(msg="template.metadata names no node: the module names each one from names")


def main():
    argument_spec = dict(KUBE_ARGS)
    argument_spec.update(
        names=dict(type="list", elements="str", required=True),
        resources=dict(type="dict", required=True),
        fields=dict(type="list", elements="str", choices=["capacity", "allocatable"],
                    default=["capacity", "allocatable"]),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        missing=dict(type="str", choices=["fail", "report", "create"], default="fail"),
        template=dict(type="dict"),
        workers=dict(type="int", default=8),
        wait_ready=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=120),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    resources = dict(params["resources"])
    if not resources:
        module.fail_json(msg="resources is empty; name at least one resource")
    validate(module, resources, params["state"])
    if params["workers"] < 1:
        module.fail_json(msg="workers is %d; it must be 1 or more" % params["workers"])
    creating = params["missing"] == "create"
    if creating:
        check_template(module, params["template"])
        if params["state"] == "absent":
            module.fail_json(msg="missing=create makes nodes with resources; it does not go with "
                                 "state=absent")
    try:
        kube = client(params["kubeconfig"], params["context"])
        existing = {node["metadata"]["name"]: node for node in kube.items("/api/v1/nodes")}
    except KubeconfigError as exc:
        module.fail_json(msg=str(exc))
    except KubeError as exc:
        module.fail_json(msg="cannot list nodes: %s" % exc)

    names = list(dict.fromkeys(params["names"]))
    missing = [name for name in names if name not in existing]
    if missing and params["missing"] == "fail":
        module.fail_json(msg="node(s) %s not found; the cluster has %d node(s)%s"
                         % (", ".join(missing), len(existing),
                            (": " + ", ".join(sorted(existing)[:10])) if existing else ""))

    created = []
    if creating and missing:
        if module.check_mode:
            created = list(missing)
        else:
            bodies = {name: node_body(params["template"], name, resources, params["fields"])
                      for name in missing}
            done = kube.each(lambda k, name: k.create("/api/v1/nodes", bodies[name]), missing,
                             params["workers"])
            failed = []
            for name, answer, error in done:
                if error is None:
                    existing[name] = answer
                    created.append(name)
                elif error.status == 409:  # made meanwhile by someone else: it exists
                    existing[name] = kube.get("/api/v1/nodes/" + name)
                else:
                    failed.append("%s (%s)" % (name, error))
            if failed:
                module.fail_json(msg="cannot create %d of %d node(s): %s"
                                 % (len(failed), len(missing), "; ".join(failed[:5])),
                                 created=created, changed=bool(created))
            missing = []

    report, patches, before_text, after_text = {}, {}, [], []
    for name in names:
        if name not in existing:
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
        patches[name] = patch
        before_text.append("%s: %s" % (name, {f: {r: v["before"] for r, v in rs.items()}
                                              for f, rs in node_report.items()}))
        after_text.append("%s: %s" % (name, {f: {r: v["after"] for r, v in rs.items()}
                                             for f, rs in node_report.items()}))
    changed_nodes = list(patches)
    if patches and not module.check_mode:
        # the answer is the node as stored: what the cluster now advertises
        done = kube.each(lambda k, name: k.patch("/api/v1/nodes/%s/status" % name,
                                                 {"status": patches[name]}),
                         changed_nodes, params["workers"])
        failed = []
        for name, answer, error in done:
            if error is None:
                existing[name] = answer
            else:
                failed.append("%s: %s" % (name, error))
        if failed:
            module.fail_json(msg="cannot patch status of node %s" % "; ".join(failed[:5]),
                             changed_nodes=[n for n in changed_nodes
                                            if not any(f.startswith(n + ":") for f in failed)],
                             created=created)

    result = dict(changed=bool(changed_nodes or created), changed_nodes=changed_nodes,
                  created=created, missing=missing if not creating else
                  (created if module.check_mode else []),
                  nodes={k: v for k, v in report.items() if v}, not_ready=[], waited=0.0)
    if params["wait_ready"] and not missing and not module.check_mode:
        try:
            pending, waited = wait_ready(kube, names, existing, params["wait_timeout"])
        except KubeError as exc:
            module.fail_json(msg="cannot watch nodes: %s" % exc, **result)
        result["waited"] = waited
        if pending:
            result["not_ready"] = pending
            module.fail_json(msg="%d of %d node(s) not Ready after %ss: %s"
                             % (len(pending), len(names), params["wait_timeout"],
                                ", ".join(pending[:20])), **result)
    result["cluster_nodes"] = [summary(existing[n], resources) for n in sorted(existing)]
    if module._diff and (changed_nodes or created):
        before_text = before_text or []
        result["diff"] = {"before": "".join(line + "\n" for line in before_text),
                          "after": "".join("%s: created\n" % n for n in created)
                                   + "".join(line + "\n" for line in after_text)}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
