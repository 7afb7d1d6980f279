#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: which manifests are missing from a cluster or differ from it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: manifest_drift
short_description: Tell which Kubernetes manifests are missing from the cluster or differ from it
description:
  - Reads the live object of each manifest in O(definitions) and compares - every field the
    manifest sets must hold the same value in the live object (fields the API server adds,
    such as defaults and status, are not compared). Only reads; never changes the cluster.
  - Feed RV(to_apply) (or RV(missing) when an existing object must not be touched) to
    M(kubernetes.core.k8s) with C(when) - a no-op run then costs one light API read instead of
    a kubernetes.core apply per object (about 1.5 s each on a small machine, for its imports
    and discovery).
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
attributes:
  check_mode:
    details: The module only reads.
"""

EXAMPLES = r"""
- name: Compare the manifests with the cluster
  manifest_drift:
    kubeconfig: "{{ kubeconfig }}"
    definitions: "{{ [{'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpu-lab'}}]
                     + lookup('ansible.builtin.file', 'gpu-pod.yaml') | ansible.builtin.from_yaml_all | list }}"
  register: drift

- name: Apply only what is missing or differs
  kubernetes.core.k8s:
    kubeconfig: "{{ kubeconfig }}"
    state: present
    definition: "{{ drift.to_apply }}"
  when: drift.to_apply | length > 0
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
  description: The live object of each manifest (C(null) when missing), in order.
  returned: success
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab_kube import KUBE_ARGS, KubeconfigError, KubeError, client, parse_quantity  # noqa: E402


def _scalar_same(want, have):
    if want == have:
        return True
    if isinstance(want, bool) or isinstance(have, bool):
        return False
    if isinstance(want, (str, int, float)) and isinstance(have, (str, int, float)):
        if str(want) == str(have):
            return True
        try:
            return parse_quantity(want) == parse_quantity(have)
        except ValueError:
            return False
    return False


def differences(want, have, path=""):
    """Paths where the manifest `want` is not matched by the live object `have`."""
    if isinstance(want, dict):
        if not want and not have:
            return []
        if not isinstance(have, dict):
            return [path or "."]
        found = []
        for key, value in want.items():
            found.extend(differences(value, have.get(key), "%s.%s" % (path, key) if path else key))
        return found
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return [path]
        if any(isinstance(item, dict) for item in want):
            found = []
            for index, (item, live) in enumerate(zip(want, have)):
                found.extend(differences(item, live, "%s[%d]" % (path, index)))
            return found
        return [] if all(_scalar_same(a, b) for a, b in zip(want, have)) else [path]
    if want is None:
        return [] if have is None or have == {} or have == [] else [path]
    return [] if _scalar_same(want, have) else [path]


def main():
    spec = dict(KUBE_ARGS)
    spec.update(definitions=dict(type="list", elements="raw", required=True),
                namespace=dict(type="str", default="default"))
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    docs = [d for d in p["definitions"] if d is not None]
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind") \
                or not (doc.get("metadata") or {}).get("name"):
            module.fail_json(msg="definitions[%d] is not a manifest with apiVersion, kind and "
                             "metadata.name: %.200r" % (index, doc))
    try:
        kube = client(p["kubeconfig"], p["context"])
    except KubeconfigError as exc:
        module.fail_json(msg=str(exc))
    objects, live_objects, missing, differing, to_apply = [], [], [], [], []
    for doc in docs:
        meta = doc["metadata"]
        entry = {"api_version": doc["apiVersion"], "kind": doc["kind"], "name": meta["name"]}
        try:
            plural, namespaced = kube.resource(doc["apiVersion"], doc["kind"])
            namespace = (meta.get("namespace") or p["namespace"]) if namespaced else None
            live = kube.get(kube.path(doc["apiVersion"], doc["kind"], meta["name"], namespace),
                            missing_ok=True)
        except KubeError as exc:
            module.fail_json(msg="cannot read %s %s: %s" % (doc["kind"], meta["name"], exc))
        entry["namespace"] = namespace
        if live is None:
            entry.update(state="missing", differences=[])
            missing.append(doc)
            to_apply.append(doc)
        else:
            found = differences({k: v for k, v in doc.items() if k not in ("apiVersion", "kind")},
                                live)
            entry.update(state="differs" if found else "same", differences=found[:20])
            if found:
                differing.append(doc)
                to_apply.append(doc)
        objects.append(entry)
        live_objects.append(live)
    module.exit_json(changed=False, objects=objects, missing=missing, differing=differing,
                     to_apply=to_apply, live=live_objects)


if __name__ == "__main__":
    main()
