#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: which manifests are missing from a cluster or differ from it (and apply them)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: manifest_drift
short_description: Tell which Kubernetes manifests are missing from the cluster or differ from it, and apply them
description:
  - Reads the live object of each manifest in O(definitions) and compares - every field the
    manifest sets must hold the same value in the live object (fields the API server adds,
    such as defaults and status, are not compared). With the default O(apply=none) it only
    reads and never changes the cluster.
  - With O(apply) it also converges, in the same run, as M(kubernetes.core.k8s) with
    C(state=present) does (strategic merge patch, JSON merge patch for custom resources) -
    C(missing) creates the objects that do not exist and leaves existing ones as they are
    (an object updated since is never reverted), C(drift) also patches the ones that differ
    with the manifest. Nothing is deleted. A no-op run costs one light API read per object
    instead of a kubernetes.core apply per object (about 1 s each on a small machine, for its
    imports and discovery).
  - Without O(apply), feed RV(to_apply) (or RV(missing)) to M(kubernetes.core.k8s) with C(when).
  - Lists of mappings (containers, volumes) are compared item by item and must have the same
    length; lists of plain values must be equal. Quantities compare by value (C(1Gi) equals
    C(1073741824)).
  - A field the API server rewrites on purpose (a Secret's C(stringData)) always shows as
    different; the apply then runs and decides.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_attributes.read_only]
options:
  definitions:
    description:
      - Manifests (mappings with C(apiVersion), C(kind), C(metadata.name)), e.g. from
        C(lookup('ansible.builtin.file', 'x.yaml') | ansible.builtin.from_yaml_all).
      - C(null) documents (empty YAML documents) are skipped.
    type: list
    elements: raw
    required: true
  namespace:
    description: Namespace of namespaced objects whose manifest names none.
    type: str
    default: default
  apply:
    description:
      - C(none) only compares. C(missing) creates what is missing. C(drift) creates what is
        missing and patches what differs. Objects are applied in the order given (a Namespace
        before what lives in it).
    type: str
    choices: [none, missing, drift]
    default: none
attributes:
  check_mode:
    details: Compares, and with O(apply) says in RV(applied) what it would create or patch without changing anything.
"""

EXAMPLES = r"""
- name: Compare the manifests with the cluster
  manifest_drift:
    kubeconfig: "{{ kubeconfig }}"
    definitions: "{{ [{'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpu-lab'}}]
                     + lookup('ansible.builtin.file', 'gpu-pod.yaml') | ansible.builtin.from_yaml_all | list }}"
  register: drift

- name: Apply only what is missing or differs with kubernetes.core
  kubernetes.core.k8s:
    kubeconfig: "{{ kubeconfig }}"
    state: present
    definition: "{{ drift.to_apply }}"
  when: drift.to_apply | length > 0

- name: Or compare and apply in one run
  manifest_drift:
    kubeconfig: "{{ kubeconfig }}"
    definitions: "{{ lookup('ansible.builtin.file', 'gpu-pod.yaml') | ansible.builtin.from_yaml_all | list }}"
    apply: drift
"""

RETURN = r"""
objects:
  description: One entry per manifest, in order.
  returned: success
  type: list
  elements: dict
  sample: [{"api_version": "v1", "kind": "Pod", "namespace": "gpu-lab", "name": "cuda-probe",
            "state": "same", "differences": []}]
missing:
  description: The manifests whose object does not exist.
  returned: success
  type: list
  elements: dict
differing:
  description: The manifests whose object exists with other values.
  returned: success
  type: list
  elements: dict
to_apply:
  description: RV(missing) and RV(differing) together, in the order of O(definitions).
  returned: success
  type: list
  elements: dict
live:
  description: The live object of each manifest (C(null) when missing), in order, as read before any apply.
  returned: success
  type: list
  elements: dict
applied:
  description: What O(apply) created or patched (in check mode, would), in order; empty with C(apply=none).
  returned: success
  type: list
  elements: dict
  sample: [{"api_version": "v1", "kind": "Namespace", "namespace": null, "name": "gpu-lab", "action": "created"}]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.kube.client import KubeconfigError, kube_args  # noqa: E402
from ansible.module_utils.kube.apply import MODES, ApplyError, converge  # noqa: E402
from ansible.module_utils.kube.compare import DriftError, drift  # noqa: E402


def main():
    spec = kube_args(definitions=dict(type="list", elements="raw", required=True),
                     namespace=dict(type="str", default="default"),
                     apply=dict(type="str", choices=list(MODES), default="none"))
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    try:
        result = drift(p["kubeconfig"], p["context"], p["definitions"], p["namespace"])
        result["applied"] = converge(p["kubeconfig"], p["context"], result, p["apply"], module.check_mode)
    except (DriftError, ApplyError, KubeconfigError) as exc:
        module.fail_json(msg=str(exc))
    result["changed"] = bool(result["applied"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
