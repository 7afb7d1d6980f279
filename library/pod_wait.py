#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: wait for a Pod's phase or condition; record what the condition says."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pod_wait
short_description: Wait until a Pod reaches a phase or a condition, and record the condition's reason and message
description:
  - Polls one Pod (once a second, at most O(wait_timeout) seconds) until its C(status.phase)
    is O(phase) and/or its condition O(condition.type) has status O(condition.status). On
    timeout it fails and says what the Pod showed last - phase and every condition with its
    reason and message (the scheduler's own words for an unschedulable Pod).
  - With O(record), writes the condition's reason and message, two lines, to that file. A
    recorded observation is evidence - once the file exists it is kept as it is (unless
    O(overwrite)), and the module does not wait again; it reads the Pod once so the result
    shows its state now.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_files.mode, lab_attributes]
options:
  namespace:
    description: Namespace of the Pod.
    type: str
    required: true
  name:
    description: Name of the Pod.
    type: str
    required: true
  phase:
    description: Wait until C(status.phase) is this, e.g. C(Running).
    type: str
    choices: [Pending, Running, Succeeded, Failed, Unknown]
  condition:
    description: Wait until the Pod has this condition with this status.
    type: dict
    suboptions:
      type:
        description: Condition type, e.g. C(PodScheduled) or C(Ready).
        type: str
        required: true
      status:
        description: Wanted status of the condition.
        type: str
        choices: ["True", "False", "Unknown"]
        default: "True"
  wait_timeout:
    description: Seconds to wait at most. C(0) reads once and fails if the Pod is not there yet.
    type: int
    default: 60
  record:
    description: Write the O(condition)'s reason and message here (two lines). Needs O(condition).
    type: path
  overwrite:
    description: Replace an existing O(record) whose content differs (a backup is kept).
    type: bool
    default: false
attributes:
  check_mode:
    details:
      - Reads as usual and does not write O(record).
      - With a O(record) still to write it does not wait (nothing was changed to wait for) and
        says what a real run would record.
  diff_mode:
    details: The recorded file's before and after.
"""

EXAMPLES = r"""
- name: Wait for the scheduler's verdict and record it once
  pod_wait:
    kubeconfig: "{{ kubeconfig }}"
    namespace: gpu-lab
    name: cuda-probe
    condition: {type: PodScheduled, status: "False"}
    wait_timeout: 60
    record: /root/gpuop/out/unscheduled.txt

- name: Wait until the Pod runs
  pod_wait:
    kubeconfig: "{{ kubeconfig }}"
    namespace: gpu-lab
    name: cuda-probe
    phase: Running
"""

RETURN = r"""
phase:
  description: The Pod's phase at the last read.
  returned: success
  type: str
  sample: Pending
condition:
  description: The condition named in O(condition) at the last read (empty when it has none).
  returned: when condition is given
  type: dict
  sample: {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
           "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}
conditions:
  description: All the Pod's conditions at the last read.
  returned: success
  type: list
  elements: dict
waited:
  description: Seconds spent waiting.
  returned: success
  type: float
  sample: 1.2
recorded:
  description: The text of O(record) after this call - the earlier observation when it was kept.
  returned: when record is given
  type: str
  sample: "Unschedulable\n0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n"
kept_existing:
  description: True when O(record) existed and was kept (nothing was waited for).
  returned: when record exists and overwrite is false
  type: bool
"""

import os  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab_files import write_text  # noqa: E402
from ansible.module_utils.lab_kube import KUBE_ARGS, KubeconfigError, KubeError, client, condition  # noqa: E402


def describe(pod):
    if pod is None:
        return "the Pod does not exist"
    status = pod.get("status") or {}
    parts = ["phase %s" % status.get("phase")]
    for cond in status.get("conditions") or []:
        parts.append("%s=%s%s" % (cond.get("type"), cond.get("status"),
                                  " (%s: %s)" % (cond.get("reason"), cond.get("message"))
                                  if cond.get("reason") or cond.get("message") else ""))
    return "; ".join(parts)


def reached(pod, phase, cond):
    if pod is None:
        return False
    if phase and (pod.get("status") or {}).get("phase") != phase:
        return False
    if cond and condition(pod, cond["type"]).get("status") != cond["status"]:
        return False
    return True


def main():
    spec = dict(KUBE_ARGS)
    spec.update(
        namespace=dict(type="str", required=True),
        name=dict(type="str", required=True),
        phase=dict(type="str", choices=["Pending", "Running", "Succeeded", "Failed", "Unknown"]),
        condition=dict(type="dict", options=dict(
            type=dict(type="str", required=True),
            status=dict(type="str", choices=["True", "False", "Unknown"], default="True"))),
        wait_timeout=dict(type="int", default=60),
        record=dict(type="path"),
        overwrite=dict(type="bool", default=False),
        mode=dict(type="str", default="0644"),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True,
                           required_one_of=[("phase", "condition")],
                           required_by={"record": "condition"})
    p = module.params
    try:
        kube = client(p["kubeconfig"], p["context"])
    except KubeconfigError as exc:
        module.fail_json(msg=str(exc))
    path = "/api/v1/namespaces/%s/pods/%s" % (p["namespace"], p["name"])
    kept = bool(p["record"]) and os.path.exists(p["record"]) and not p["overwrite"]
    timeout = 0 if kept else p["wait_timeout"]
    start = time.monotonic()
    while True:
        try:
            pod = kube.get(path, missing_ok=True)
        except KubeError as exc:
            module.fail_json(msg="cannot read Pod %s/%s: %s" % (p["namespace"], p["name"], exc))
        if kept or reached(pod, p["phase"], p["condition"]):
            break
        if module.check_mode and p["record"]:
            # check mode changed nothing, so there is nothing to wait for: say what a real run
            # would record instead of waiting for the effect of a change it did not make
            module.exit_json(changed=True, phase=((pod or {}).get("status") or {}).get("phase"),
                             waited=0, recorded="",
                             msg="check mode: a real run waits up to %ss for %s=%s on Pod %s/%s "
                                 "and records it in %s (now: %s)" % (
                                     p["wait_timeout"], p["condition"]["type"],
                                     p["condition"]["status"], p["namespace"], p["name"],
                                     p["record"], describe(pod)))
        if time.monotonic() - start >= timeout:
            wanted = " and ".join(filter(None, [
                "phase %s" % p["phase"] if p["phase"] else None,
                "%s=%s" % (p["condition"]["type"], p["condition"]["status"]) if p["condition"] else None]))
            module.fail_json(msg="Pod %s/%s: waited %ss for %s; last seen: %s"
                             % (p["namespace"], p["name"], timeout, wanted, describe(pod)))
        time.sleep(1)  # poll interval of a wait bounded by wait_timeout
    status = (pod or {}).get("status") or {}
    result = dict(changed=False, phase=status.get("phase"), conditions=status.get("conditions") or [],
                  waited=round(time.monotonic() - start, 1))
    if p["condition"]:
        result["condition"] = condition(pod or {}, p["condition"]["type"])
    if p["record"]:
        text = "%s\n%s\n" % (result["condition"].get("reason") or "",
                             result["condition"].get("message") or "")
        result.update(write_text(module, p["record"], text, mode=p["mode"], backup=True,
                                 force=p["overwrite"], parents=True))
        result.pop("dest", None)
        result["recorded"] = text
        if result.get("kept_existing"):
            with open(p["record"], "r", encoding="utf-8", errors="replace") as handle:
                result["recorded"] = handle.read()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
