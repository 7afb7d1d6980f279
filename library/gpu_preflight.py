#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: record what this machine can verify of the GPU path, before anything runs."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_preflight
short_description: Record which layers of the GPU path this machine can verify (passed, failed or skipped)
description:
  - Before any experiment, checks what the machine it runs on can verify - the executables and
    contexts each layer needs (C(nvidia-smi) for the driver, C(containerd) for the container
    runtime, the device-plugin socket, a reachable cluster and C(kubectl) for the rest) - and
    records each as C(available), C(missing) or C(unsupported) (cannot exist on this platform).
  - The overall status is C(passed) (everything available), C(skipped) (some layers cannot be
    verified here - named in the reason; never reported as passed) or C(failed) (a requirement
    marked C(required) is not available).
  - The record is JSON - experiment id, track, kind, time, host, requirements with status,
    layers, overall status and reason - written to O(dest)/<experiment_id>.json. A rerun with
    the same id keeps the first record (it is evidence) and returns it.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_attributes]
options:
  experiment_id:
    description: The experiment's id; names the record.
    type: str
    required: true
  track:
    description: The track the experiment belongs to.
    type: str
    default: kubernetes
  kind:
    description: The kind of record.
    type: str
    default: kubernetes-gpu-preflight
  dest:
    description: Folder for the records.
    type: path
    required: true
  reason:
    description: Your note on the run (what was and was not accessed); added to the reason.
    type: str
  kubeconfig:
    description: kubeconfig of the cluster to check for reachability; without it the cluster requirement is C(missing).
    type: path
  context:
    description: Context in the kubeconfig.
    type: str
  requirements:
    description:
      - What to check, each C(name), C(kind) (C(executable), C(cluster), C(socket) or C(path)),
        C(layers) it serves, optional C(path) (a file, a glob for sockets, or the executable's
        path when it is not on PATH) and C(required) (its absence fails the preflight).
      - Default - C(kubectl), C(nvidia-smi), C(containerd), the cluster, and the device-plugin
        socket C(/var/lib/kubelet/device-plugins/*.sock).
    type: list
    elements: dict
attributes:
  check_mode:
    details: Checks everything and reports the record it would write, without writing it.
  diff_mode:
    details: Shows the record written.
"""

EXAMPLES = r"""
- name: What can this machine verify?
  gpu_preflight:
    experiment_id: kubernetes-day02-preflight-20260916-001
    dest: ~/experiments/preflight
    kubeconfig: ~/.kube/config
    reason: No GPU Kubernetes context was accessed; no workload was executed.
  register: preflight
"""

RETURN = r"""
record:
  description: The record (as written, or as found when the id was already recorded).
  returned: success
  type: dict
status:
  description: passed, failed or skipped.
  returned: success
  type: str
path:
  description: The record's file.
  returned: success
  type: str
kept_existing:
  description: True when a record with this id existed and was kept.
  returned: success
  type: bool
summary:
  description: The record as a few plain lines.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.diagnosis.preflight import preflight  # noqa: E402
from ansible.module_utils.lab.refusals import LabError  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            experiment_id=dict(type="str", required=True),
            track=dict(type="str", default="kubernetes"),
            kind=dict(type="str", default="kubernetes-gpu-preflight"),
            dest=dict(type="path", required=True),
            reason=dict(type="str"),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
            requirements=dict(type="list", elements="dict"),
        ),
        supports_check_mode=True,
    )
    try:
        result = preflight(module)
    except LabError as exc:   # PreflightError, KubeconfigError
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
