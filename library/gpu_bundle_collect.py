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
  - Then every file it writes (C(bundle.json), C(cluster/*.json), the logs, the node files)
    passes the redaction rules - registry auth in containerd configs and C(crictl info), fields,
    flags and C(KEY=value) assignments named for a password, token, secret, credential or
    API/private/access key, credentials in URLs, Authorization headers and Bearer tokens, AWS
    keys, PEM private keys, JWTs - and the user's own (O(redact)). A hidden value becomes
    C(<redacted>); keys, lines and the file's format stay (JSON stays JSON, TOML stays TOML), so
    M(gpu_diagnose) reads the bundle as before. C(bundle.json)'s C(redactions) says per file which
    rule hid how many values (never a value).
  - With O(archive), the same files also go into C(<dest>.tar.gz) (mode 0600, members under one
    relative folder, no links), written beside it and renamed into place.
  - The folder is written atomically (built beside O(dest), then renamed into place). A O(dest)
    that already holds a bundle is kept as it is (RV(kept), C(changed=false)) unless O(force) -
    then it is replaced as a whole. A non-empty O(dest) that is not a bundle is refused, O(force)
    or not.
  - Bad input - a redaction rule that cannot be used (no name, a regex that does not compile or
    matches the empty string, a literal shorter than 4 characters), a bad Pod name or selector, a
    O(dest) that cannot take the bundle - is refused before the cluster is read, naming it and
    the fix. O(validate_only) checks only that.
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
    default: [gpu-operator, nvidia-gpu-operator, nvidia-device-plugin, nvidia, nvidia-dra-driver-gpu]
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
              app=nvidia-dcgm-exporter, app.kubernetes.io/part-of=gpu-operator,
              app.kubernetes.io/name=dra-driver-nvidia-gpu]
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
  redact:
    description:
      - Redaction rules of your own, added to the built-in ones; each hides what it matches in
        every file (or in the files O(redact[].files) names) and is counted under its name.
      - Neither the literal nor the regex is ever written into the bundle or its report.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The rule's name in the report (letters, digits, C(.), C(_), C(-)); not a built-in rule's.
        type: str
      literal:
        description: A fixed string to hide (at least 4 characters). Give this or O(redact[].regex).
        type: str
      regex:
        description:
          - A Python regular expression; its match is hidden, or only its group named C(mask)
            when it has one (C(ticket=(?P<mask>[0-9]+))). It must not match the empty string.
        type: str
      files:
        description: Globs of bundle paths the rule applies to (C(logs/*), C(nodes/*/kubelet.log)); every file when omitted.
        type: list
        elements: str
  archive:
    description: Also write the bundle as one archive, C(<dest>.tar.gz), to send.
    type: bool
    default: false
  validate_only:
    description:
      - Only check the options (the redaction rules above all) and whether O(dest) (and its
        archive) can take the bundle; read nothing, write nothing. Run it before the node side
        is collected, so bad input stops everything at once.
    type: bool
    default: false
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
        archive: true
        redact:
          - name: license-server
            literal: lic-7f3a9c2e1b
          - name: ticket-ids
            regex: 'TICKET-(?P<mask>[0-9]+)'
            files: ['logs/*']
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
  description: The content of C(bundle.json) (with C(redactions) - per file, which rule hid how many values).
  returned: when written or in check mode
  type: dict
archive:
  description: The archive written (would be written, in check mode), C(<dest>.tar.gz); null without O(archive) or when kept.
  returned: always
  type: str
redacted:
  description: One line - how many values were hidden in how many files, and where the report is.
  returned: when written or in check mode
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.bundle import collect  # noqa: E402
from ansible.module_utils.bundle import contents  # noqa: E402
from ansible.module_utils.lab.refusals import LabError  # noqa: E402
from ansible.module_utils.kube.client import KUBE_ARGS  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            KUBE_ARGS,
            dest=dict(type="path", required=True),
            force=dict(type="bool", default=False),
            pods=dict(type="list", elements="str", default=[]),
            stack_namespaces=dict(type="list", elements="str", default=contents.STACK_NAMESPACES),
            stack_selectors=dict(type="list", elements="str", default=contents.STACK_SELECTORS),
            gpu_resource_prefixes=dict(type="list", elements="str", default=["nvidia.com/"]),
            logs=dict(type="bool", default=True),
            log_limit_bytes=dict(type="int", default=8 * 1024 * 1024),
            max_logs=dict(type="int", default=100),
            nodes=dict(type="dict", default={}),
            redact=dict(type="list", elements="dict", default=[], options=contents.REDACT_RULE_OPTIONS),
            archive=dict(type="bool", default=False),
            validate_only=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    try:
        result = collect.collect_bundle(module.params, module.check_mode)
    except LabError as exc:   # BundleError, ArchiveError, KubeError, KubeconfigError
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
