#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: grade the lab's eight steps (files and live cluster)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_grade
short_description: Grade the GPU incident lab, step by step, with reasons
description:
  - Checks the lab folder and, for steps 5-8, the live cluster against the lab's spec and
    returns, per step, whether it passed and why not. The same checks are Molecule's verify,
    so there is one definition of "step N is right".
  - Values in the reports are compared with what the trainee's own files and the live
    cluster say (e.g. rollout.txt against the DaemonSet's status), not with example numbers.
  - The lab's three common mistakes are recognised and named with their fix - an unquoted
    dotted table name, C(data.any) written as a mapping, an update pushed before all Pods
    were Ready.
  - Changes nothing. Step 4 runs the trainee's C(check-runtime.sh) twice with a fake
    C(containerd) first on PATH, in a temporary folder, as the original grader does.
version_added: "1.0.0"
author: gpu-incident-lab contributors
options:
  lab_root:
    description: The lab folder (the original lab's C(/root/gpuop)).
    type: path
    required: true
  steps:
    description: Step numbers to grade. Steps 1-4 need no cluster.
    type: list
    elements: int
    default: [1, 2, 3, 4, 5, 6, 7, 8]
  kubeconfig:
    description: kubeconfig of the lab cluster (steps 5-8).
    type: path
  context:
    description: Context in the kubeconfig.
    type: str
  observed_runtimes:
    description: The incident-day observation that LOADED_RUNTIMES must show.
    type: list
    elements: str
    default: [runc]
  containerd_version:
    description: containerd whose merge semantics judge the configs.
    type: str
    default: "1.7"
  physical_gpus:
    description: GPUs of the time-sliced node.
    type: int
    default: 4
  vram_per_gpu_gib:
    description: Memory per GPU in GiB.
    type: float
    default: 40
  nodes:
    description: The lab's node names; default every node labelled C(gpu-incident-lab/node=true).
    type: list
    elements: str
  gpu_node:
    description: The node step 6 advertises GPUs on.
    type: str
    default: lab-node-0
  gpu_amount:
    description: The amount it advertises.
    type: str
    default: "4"
  timeslicing_node:
    description: The node step 7 time-slices.
    type: str
    default: lab-node-1
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Grade every step
  lab_grade:
    lab_root: /root/gpuop
    kubeconfig: ~/.kwok/clusters/gpu-incident-lab/kubeconfig.yaml
  register: grade

- name: Grade the file steps only (no cluster needed)
  lab_grade:
    lab_root: /root/gpuop
    steps: [1, 2, 3, 4]
"""

RETURN = r"""
steps:
  description: Per step number, C(passed), C(reasons) (why it failed) and C(advice).
  returned: always
  type: dict
  sample: {"3": {"passed": false, "reasons": ["LOADED_RUNTIMES=nvidia, but ..."], "advice": []}}
passed:
  description: Whether every graded step passed.
  returned: always
  type: bool
failed_steps:
  description: Numbers of the steps that failed.
  returned: always
  type: list
  elements: int
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab_checks import Grader  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            lab_root=dict(type="path", required=True),
            steps=dict(type="list", elements="int", default=[1, 2, 3, 4, 5, 6, 7, 8]),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
            observed_runtimes=dict(type="list", elements="str", default=["runc"]),
            containerd_version=dict(type="str", default="1.7"),
            physical_gpus=dict(type="int", default=4),
            vram_per_gpu_gib=dict(type="float", default=40),
            nodes=dict(type="list", elements="str"),
            gpu_node=dict(type="str", default="lab-node-0"),
            gpu_amount=dict(type="str", default="4"),
            timeslicing_node=dict(type="str", default="lab-node-1"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    bad = [s for s in p["steps"] if s not in range(1, 9)]
    if bad:
        module.fail_json(msg="steps must be numbers 1-8; not: %s" % bad)
    vram = p["vram_per_gpu_gib"]
    grader = Grader(p["lab_root"], p["kubeconfig"], p["context"],
                    observed_runtimes=p["observed_runtimes"],
                    containerd_version=p["containerd_version"],
                    physical_gpus=p["physical_gpus"],
                    vram_per_gpu_gib=int(vram) if vram.is_integer() else vram,
                    nodes=p["nodes"], gpu_node=p["gpu_node"], gpu_amount=p["gpu_amount"],
                    timeslicing_node=p["timeslicing_node"])
    steps = grader.grade(sorted(set(p["steps"])))
    failed = [int(k) for k, v in steps.items() if not v["passed"]]
    module.exit_json(changed=False, steps=steps, passed=not failed, failed_steps=failed)


if __name__ == "__main__":
    main()
