#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: read Kubernetes objects as the API server returns them (k8s_info's read)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kube_objects
short_description: Read Kubernetes objects - what kubernetes.core.k8s_info returns, at a fraction of its CPU
description:
  - Gets the object O(name) of O(kind), or lists the objects of O(kind) (in O(namespace), or in
    every namespace without it) that O(label_selectors) and O(field_selectors) select, and returns
    them in RV(resources) - the key and shape kubernetes.core.k8s_info returns, so a task's
    C(until) reads either (tests/cluster/test_live.py compares the two on the same cluster).
  - Why a module of its own - kubernetes.core.k8s_info imports the C(kubernetes) package, about
    0.5 s of CPU per call on the lab's 2-core machine, and the lab's waits (C(until) with
    C(retries)) call it every second or two. This module talks to the API server with the
    lab's own client (standard library, one HTTPS connection) and, on the lab's own host, runs
    inside Ansible's worker (action_plugins/lab_in_worker.py).
  - A name that does not exist gives an empty list, as k8s_info does; so does a kind the
    cluster does not serve (RV(api_found) false).
  - Only reads; writes stay with kubernetes.core.k8s.
version_added: "1.7.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_attributes]
options:
  api_version:
    description: The kind's API group and version, e.g. C(v1) or C(apps/v1).
    type: str
    default: v1
  kind:
    description: The kind, e.g. C(Node), C(Pod), C(DaemonSet).
    type: str
    required: true
  name:
    description:
      - One object by name. The API server applies no selector to a single object, so with a
        name O(label_selectors) and O(field_selectors) are refused.
    type: str
  namespace:
    description:
      - For a namespaced kind. With O(name) and without a namespace, the kubeconfig context's
        namespace (C(default) when it names none); a list without it spans every namespace.
      - Refused for a kind that is not namespaced.
    type: str
  label_selectors:
    description: Label selectors, each C(key=value), C(key!=value), C(key in (a,b)), C(key) or C(!key); all must hold.
    type: list
    elements: str
    default: []
  field_selectors:
    description: Field selectors, each e.g. C(spec.nodeName=lab-node-1); all must hold.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    details: Only reads; the same in check mode.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: The node's labels
  kube_objects:
    kubeconfig: "{{ kubeconfig }}"
    kind: Node
    name: lab-node-1
  register: node

- name: Wait until the device plugin's Pods are gone from the node
  kube_objects:
    kubeconfig: "{{ kubeconfig }}"
    kind: Pod
    label_selectors: [app=nvidia-device-plugin-daemonset]
    field_selectors: ["spec.nodeName=lab-node-1"]
  register: pods
  until: pods.resources | length == 0
  retries: 60
  delay: 1
"""

RETURN = r"""
resources:
  description: The objects as the API server returns them - each object of a list with its C(apiVersion) and C(kind), as k8s_info gives them; empty when none.
  returned: always
  type: list
  elements: dict
api_found:
  description: Whether the cluster serves O(kind) in O(api_version).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.kube.client import KubeconfigError, KubeError, client, kube_args  # noqa: E402


def read(kube, params):
    """(api_found, resources) for the module's params."""
    api, kind, name, namespace = params["api_version"], params["kind"], params["name"], params["namespace"]
    try:
        plural, namespaced = kube.resource(api, kind)
    except KubeError as exc:
        if exc.status == 404:
            return False, []
        raise
    if namespace and not namespaced:
        raise KubeError(None, "%s (%s) is not namespaced: give no namespace" % (kind, api))
    if name:
        found = kube.get(kube.path(api, kind, name, namespace), missing_ok=True)
        return True, [found] if found is not None else []
    if namespaced and not namespace:    # every namespace: the kind's path without one
        path = ("/api/v1" if api == "v1" else "/apis/" + api) + "/" + plural
    else:
        path = kube.path(api, kind, None, namespace)
    selectors = dict(labelSelector=",".join(params["label_selectors"]) or None,
                     fieldSelector=",".join(params["field_selectors"]) or None)
    found = kube.items(path, **selectors)
    for item in found:
        # each object of a list as the kubernetes client gives it (kubernetes.dynamic's
        # ResourceInstance): the list's apiVersion and kind, which the server sends once
        item.setdefault("apiVersion", api)
        item.setdefault("kind", kind)
    return True, found


def main():
    spec = kube_args(
        api_version=dict(type="str", default="v1"),
        kind=dict(type="str", required=True),
        name=dict(type="str"),
        namespace=dict(type="str"),
        label_selectors=dict(type="list", elements="str", default=[]),
        field_selectors=dict(type="list", elements="str", default=[]),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    if params["name"] and (params["label_selectors"] or params["field_selectors"]):
        module.fail_json(msg="kube_objects: name %s is one object - the API server applies no selector to it; "
                             "give the name or the selectors, not both" % params["name"])
    try:
        kube = client(params["kubeconfig"], params["context"])
        api_found, resources = read(kube, params)
    except KubeconfigError as exc:
        module.fail_json(msg=str(exc))
    except KubeError as exc:
        module.fail_json(msg="kube_objects %s %s%s: %s" % (
            params["api_version"], params["kind"], (" " + params["name"]) if params["name"] else "", exc))
    module.exit_json(changed=False, api_found=api_found, resources=resources)


if __name__ == "__main__":
    main()
