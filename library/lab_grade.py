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
        reboot - C("") when the lab has none.
    type: str
    default: ""
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
  replicas:
    description: The time-slicing replicas the lab uses (lab_timeslicing_replicas).
    type: int
    default: 5
  guide:
    description: The trainee guide (docs/steps.md); a failing step points at its section.
    type: path
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
    description: Can run in check mode and report what would change without changing it.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
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
from ansible.module_utils.lab_grader import (  # noqa: E402
    HAS_YAML, YAML_IMPORT_ERROR, Grader, junit_xml, report_text)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            lab_root=dict(type="path", required=True),
            steps=dict(type="raw"),
            drill=dict(type="str"),
            drill_state_file=dict(type="path"),
            node_facts_file=dict(type="path"),
            report_path=dict(type="path"),
            junit_path=dict(type="path"),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
            observed_runtimes=dict(type="list", elements="str", default=["runc"]),
            containerd_version=dict(type="str", default="1.7"),
            physical_gpus=dict(type="int", default=4),
            vram_per_gpu_gib=dict(type="float", default=40),
            nodes=dict(type="list", elements="str"),
            replicas=dict(type="int", default=5),
            guide=dict(type="path"),
            gpu_node=dict(type="str", default="lab-node-0"),
            gpu_amount=dict(type="str", default="4"),
            timeslicing_node=dict(type="str", default="lab-node-1"),
            real_node=dict(type="str", default=""),
            real_node_crictl=dict(type="path", default="crictl"),
        ),
        supports_check_mode=True,
    )
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
    p = module.params
    steps, problem = parse_steps(p["steps"], default=[] if p["drill"] else list(range(1, 9)))
    if problem:
        module.fail_json(msg=problem)
    if not steps and not p["drill"]:
        module.fail_json(msg="nothing to grade: steps is empty; give step numbers 1-8 (e.g. "
                             "grade_steps=1,2) or leave them out for all eight")
    vram = p["vram_per_gpu_gib"]
    grader = Grader(p["lab_root"], p["kubeconfig"], p["context"],
                    observed_runtimes=p["observed_runtimes"],
                    containerd_version=p["containerd_version"],
                    physical_gpus=p["physical_gpus"],
                    vram_per_gpu_gib=int(vram) if vram.is_integer() else vram,
                    nodes=p["nodes"], gpu_node=p["gpu_node"], gpu_amount=p["gpu_amount"],
                    timeslicing_node=p["timeslicing_node"], replicas=p["replicas"])
    results = grader.grade(steps)
    if p["guide"]:
        for step, res in results.items():
            if not res["passed"]:
                key = step if step.isdigit() else step.replace(" ", "-")
                anchor = "step-" + key if step.isdigit() else "drills"
                res["advice"].append("the guide's section: %s#%s (中文: %s#%s; in the terminal: "
                                     "ansible-playbook playbooks/guide.yml -e step=%s)" % (
                                         p["guide"], anchor,
                                         p["guide"].replace("steps.md", "steps.zh-CN.md"), anchor,
                                         key if step.isdigit() else "drills"))
    if p["drill"] == "reboot":
        results["drill reboot"] = grader.reboot_fix(p["real_node"], p["real_node_crictl"]).as_dict()
    elif p["drill"]:
        if not p["drill_state_file"]:
            module.fail_json(msg="drill needs drill_state_file (where playbooks/drill.yml records "
                                 "the drill in place)")
        results["drill " + p["drill"]] = grader.drill(p["drill"], p["drill_state_file"],
                                                      p["node_facts_file"]).as_dict()
    failed = [k for k, v in results.items() if not v["passed"]]
    module.exit_json(changed=False, steps=results, passed=not failed,
                     failed_steps=[int(k) if k.isdigit() else k for k in failed],
                     text=report_text(results, p["report_path"], p["junit_path"]),
                     junit=junit_xml(results))


def parse_steps(value, default):
    """Step numbers from a list or the text forms a user types: 3, 1,2, [1,2]; (steps, error)."""
    if value is None or value == "":
        return default, None
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, str):
        items = [v for v in value.strip().strip("[]").replace(" ", "").split(",") if v != ""]
    else:
        return None, "steps must be step numbers 1-8, got %r" % (value,)
    steps = []
    for item in items:
        text = str(item).strip().strip("'\"")
        if not text.isdigit() or not 1 <= int(text) <= 8:
            return None, ("steps must be numbers 1-8 (as a list, or typed as 3, 1,2 or [1,2]); "
                          "not: %r" % (item,))
        steps.append(int(text))
    return sorted(set(steps)), None


if __name__ == "__main__":
    main()
