#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: collect a GPU support bundle from a live cluster (and its nodes' side) into a folder."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_bundle_collect
short_description: Write a GPU support bundle - the cluster's objects and logs, and the nodes' own side - into a folder
description:
  - Reads, from the API server, what C(kubectl get -o json) prints for nodes, Pods, RuntimeClasses,
    events, DaemonSets and ConfigMaps (C(cluster/*.json)), and C(kubectl logs --all-containers) of
    the GPU stack's Pods, the Pods named in O(pods) and every Pod that requests a GPU and is not
    running (C(logs/<namespace>/<pod>.log)); adds the node files M(gpu_bundle_node) returned
    (C(nodes/<node>/...)); writes C(bundle.json), the index - what was collected, from where,
    and for every file that is not there, why.
  - Secrets never go in - Secret objects are never read; every env C(value) of Pods and Pod
    templates is replaced by C(<redacted>) (names and C(valueFrom) references kept); ConfigMap
    values outside the GPU stack (its namespaces O(stack_namespaces), and ConfigMaps a GPU-stack
    Pod mounts or reads) are replaced by C(<redacted>) (keys kept); the
    C(kubectl.kubernetes.io/last-applied-configuration) annotation (a whole copy of the object)
    is replaced by C(<redacted>); managedFields are dropped, as kubectl hides them.
  - The folder is written atomically (built beside O(dest), then renamed into place). A O(dest)
    that already holds a bundle is kept as it is (RV(kept), C(changed=false)) unless O(force) -
    then it is replaced as a whole. A non-empty O(dest) that is not a bundle is refused, O(force)
    or not.
  - Check mode reads the cluster and writes nothing.
version_added: "1.2.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_attributes]
options:
  dest:
    description: The bundle's folder (new, empty, or an earlier bundle to keep or, with O(force), replace).
    type: path
    required: true
  force:
    description: Replace an earlier bundle in O(dest).
    type: bool
    default: false
  pods:
    description: Pods whose logs go in besides the GPU stack's (the Pod being diagnosed), as C(NAMESPACE/NAME).
    type: list
    elements: str
    default: []
  stack_namespaces:
    description: Namespaces of the GPU stack - all their Pods' logs go in, their ConfigMaps unredacted.
    type: list
    elements: str
    default: [gpu-operator, nvidia-gpu-operator, nvidia-device-plugin, nvidia]
  stack_selectors:
    description:
      - Label selectors (C(key=value), C(key), C(!key), comma = and) of GPU-stack Pods in any
        namespace - the device plugin as a static manifest, the GPU Operator's operands and the
        Helm chart's Pods by default.
    type: list
    elements: str
    default: [name=nvidia-device-plugin-ds, app=nvidia-device-plugin-daemonset,
              app.kubernetes.io/name=nvidia-device-plugin, app=gpu-feature-discovery,
              app.kubernetes.io/name=gpu-feature-discovery, app=nvidia-container-toolkit-daemonset,
              app=nvidia-driver-daemonset, app=nvidia-operator-validator, app=nvidia-mig-manager,
              app=nvidia-dcgm-exporter, app.kubernetes.io/part-of=gpu-operator]
  gpu_resource_prefixes:
    description: A Pod requesting a resource starting with one of these requests a GPU.
    type: list
    elements: str
    default: [nvidia.com/]
  logs:
    description: Collect Pod logs.
    type: bool
    default: true
  log_limit_bytes:
    description: Bytes of each container's log (C(limitBytes)); 0 - all.
    type: int
    default: 8388608
  max_logs:
    description: Most Pods whose logs are collected; the rest are listed in the index as C(skipped).
    type: int
    default: 100
  nodes:
    description:
      - Node name -> what M(gpu_bundle_node) returned on that node (its C(files) and C(index)); a
        node whose collection failed may give C(msg) instead, which goes into the index.
    type: dict
    default: {}
attributes:
  diff_mode:
    details: Says which bundle O(dest) held before and the files it holds after.
"""

EXAMPLES = r"""
- name: A support bundle of the cluster and two GPU nodes
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Collect it
      gpu_bundle_collect:
        kubeconfig: ~/.kube/config
        dest: /var/tmp/gpu-bundle-2026-12-01
        pods: [ml/trainer-0]
        nodes: "{{ dict(groups['gpu_nodes'] | zip(groups['gpu_nodes'] | map('extract', hostvars, 'node_side'))) }}"
"""

RETURN = r"""
dest:
  description: The bundle's folder.
  returned: always
  type: str
kept:
  description: True when O(dest) already held a bundle and was kept (no O(force)).
  returned: always
  type: bool
files:
  description: The files the bundle holds (would hold, in check mode), relative to O(dest).
  returned: always
  type: list
  elements: str
missing:
  description: Every file or part that is not in the bundle - file, status (missing, failed, skipped) and reason.
  returned: always
  type: list
  elements: dict
index:
  description: The content of C(bundle.json).
  returned: unless kept
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils import gpu_support_bundle as gsb  # noqa: E402
from ansible.module_utils.lab_errors import LabError  # noqa: E402
from ansible.module_utils.lab_kube import KUBE_ARGS  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            KUBE_ARGS,
            dest=dict(type="path", required=True),
            force=dict(type="bool", default=False),
            pods=dict(type="list", elements="str", default=[]),
            stack_namespaces=dict(type="list", elements="str", default=gsb.STACK_NAMESPACES),
            stack_selectors=dict(type="list", elements="str", default=gsb.STACK_SELECTORS),
            gpu_resource_prefixes=dict(type="list", elements="str", default=["nvidia.com/"]),
            logs=dict(type="bool", default=True),
            log_limit_bytes=dict(type="int", default=8 * 1024 * 1024),
            max_logs=dict(type="int", default=100),
            nodes=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = gsb.collect_bundle(module.params, module.check_mode)
    except LabError as exc:   # BundleError, KubeError, KubeconfigError
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
