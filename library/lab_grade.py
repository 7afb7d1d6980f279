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
author: gpu-incident-lab contributors (@gpu-incident-lab)
options:
  lab_root:
    description: The lab folder (the original lab's C(/root/gpuop)).
    type: path
    required: true
  steps:
    description:
      - Step numbers to grade, 1-8. Steps 1-4 need no cluster.
      - A list, or the forms typed on a command line - C(3), C(1,2), C([1,2]).
      - Defaults to all eight, or to none when O(drill) is given.
    type: raw
  drill:
    description:
      - Grade this diagnosis drill instead - C(<lab_root>/drills/<drill>.txt) with C(LAYER=) and
        C(EVIDENCE=) lines, against the drill in place (O(drill_state_file)) and the live
        cluster's diagnosis.
      - C(reboot) grades the fix after the real reboot instead (O(real_node) Ready, C(runc) and
        C(nvidia) in the running daemon, the Pod C(gpu-lab/runtime-check) running there).
    type: str
  real_node:
    description:
      - The real node of the lab (C(lab-node-1)), for O(drill=reboot) - the fix after the real
        reboot - empty or omitted when the lab has none.
    type: str
  real_node_crictl:
    description: The command that runs C(crictl) on the real node (the lab's wrapper), for O(drill=reboot).
    type: path
    default: crictl
  drill_state_file:
    description: Where playbooks/drill.yml recorded the drill in place.
    type: path
  node_facts_file:
    description: The lab's simulated node-side facts (JSON per node) the diagnosis reads.
    type: path
  report_path:
    description: Where the caller writes the JSON report; only named in RV(text).
    type: path
  junit_path:
    description: Where the caller writes RV(junit); only named in RV(text).
    type: path
  kubeconfig:
    description: kubeconfig of the lab cluster (steps 5-8 and the drills).
    type: path
  context:
    description: Context in the kubeconfig.
    type: str
  guide:
    description: The trainee guide (docs/steps.md); a failing step points at its section.
    type: path
  observed_runtimes:
    description:
      - The incident-day observation that LOADED_RUNTIMES must show (step 3) - the lab's
        C(lab_observed_runtimes).
      - Like every option below, a lab setting with no default here - C(lab_grade_settings)
        in the lab's C(inventory/group_vars/all/lab.yml) gives them all. A step whose
        settings are not given fails with a reason naming them.
    type: list
    elements: str
  containerd_version:
    description: containerd whose merge semantics judge the configs (steps 2 and 3) - C(lab_containerd_version).
    type: str
  nvidia_dropin:
    description:
      - The toolkit's drop-in step 2 expects - C(name), its file name in C(conf.d), and
        C(runtimes), name -> C(runtime_type) and C(options) - the lab's C(lab_nvidia_dropin).
    type: dict
  physical_gpus:
    description: GPUs of the time-sliced node (step 7) - C(lab_physical_gpus).
    type: int
  vram_per_gpu_gib:
    description: Memory per GPU in GiB (step 7) - C(lab_vram_per_gpu_gib).
    type: float
  replicas:
    description: The time-slicing replicas the lab uses (step 7) - C(lab_timeslicing_replicas).
    type: int
  timeslicing_node:
    description: The node step 7 time-slices.
    type: str
  gpu_node:
    description: The node step 6 advertises GPUs on.
    type: str
  gpu_amount:
    description: The amount it advertises (step 6) - C(lab_gpu_amount).
    type: str
  nodes:
    description: The lab's node names, every one of which node-gpu.txt lists (step 6).
    type: list
    elements: str
  rollout:
    description:
      - What step 8 deploys - the C(rollout_stall) role's values, without the
        C(rollout_stall_) prefix. The lab reads them from the role's defaults, so the
        grader expects what the role deploys.
    type: dict
    suboptions:
      namespace:
        description: Namespace of the DaemonSet.
        type: str
        required: true
      name:
        description: Name of the DaemonSet.
        type: str
        required: true
      max_unavailable:
        description: Its C(rollingUpdate.maxUnavailable).
        type: raw
        required: true
      initial_image:
        description: Image of the initial spec (toolkit-ds.yaml).
        type: str
        required: true
      initial_memory:
        description: Memory request of the initial spec.
        type: str
        required: true
      update_image:
        description: Image of the update pushed once every Pod is Ready.
        type: str
        required: true
      update_memory:
        description: Memory request of the update (more than any node has).
        type: str
        required: true
extends_documentation_fragment: [lab_attributes.read_only]
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
  description: Numbers of the steps that failed (and C(drill NAME) when a drill failed).
  returned: always
  type: list
  elements: raw
text:
  description: The grade as plain text - one PASS/FAIL line per step, its reasons and advice below.
  returned: always
  type: str
junit:
  description: The same as JUnit XML, one test case per step.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib  # noqa: E402
from ansible.module_utils.lab.refusals import LabError  # noqa: E402
from ansible.module_utils.grader.grade import grade_lab  # noqa: E402
from ansible.module_utils.lab.yaml_load import HAS_YAML, YAML_IMPORT_ERROR  # noqa: E402

ARGUMENT_SPEC = dict(
    lab_root=dict(type="path", required=True),
    steps=dict(type="raw"),
    drill=dict(type="str"),
    real_node=dict(type="str"),
    real_node_crictl=dict(type="path", default="crictl"),
    drill_state_file=dict(type="path"),
    node_facts_file=dict(type="path"),
    report_path=dict(type="path"),
    junit_path=dict(type="path"),
    kubeconfig=dict(type="path"),
    context=dict(type="str"),
    guide=dict(type="path"),
    # the lab's settings the checks compare against: no defaults here (lab_grade_settings)
    observed_runtimes=dict(type="list", elements="str"),
    containerd_version=dict(type="str"),
    nvidia_dropin=dict(type="dict"),
    physical_gpus=dict(type="int"),
    vram_per_gpu_gib=dict(type="float"),
    replicas=dict(type="int"),
    timeslicing_node=dict(type="str"),
    gpu_node=dict(type="str"),
    gpu_amount=dict(type="str"),
    nodes=dict(type="list", elements="str"),
    rollout=dict(type="dict", options=dict(
        namespace=dict(type="str", required=True),
        name=dict(type="str", required=True),
        max_unavailable=dict(type="raw", required=True),
        initial_image=dict(type="str", required=True),
        initial_memory=dict(type="str", required=True),
        update_image=dict(type="str", required=True),
        update_memory=dict(type="str", required=True),
    )),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
    try:
        result = grade_lab(module.params)
    except LabError as exc:
        module.fail_json(msg=exc.message)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
