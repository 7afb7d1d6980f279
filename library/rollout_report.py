#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: wait for a DaemonSet rollout to finish or stall, and report it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rollout_report
short_description: Report a DaemonSet rollout - complete, or stalled and why
description:
  - Polls a DaemonSet and its Pods until the rollout is complete, or has stalled (a Pod of
    the current template cannot be scheduled and the controller's status stopped moving),
    or the timeout passes.
  - Reports DESIRED, UPDATED and READY from the DaemonSet status
    (desiredNumberScheduled, updatedNumberScheduled, numberReady), OLD_IMAGE_PODS counted
    from the Pods' own images, MAX_UNAVAILABLE from the spec, and BLOCKER derived from the
    scheduler's message on the unschedulable Pod (C(Insufficient memory) gives
    C(insufficient-memory)).
  - Works on any DaemonSet of any cluster; it only reads.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube, lab_files, lab_attributes]
options:
  namespace:
    description: Namespace of the DaemonSet.
    type: str
    required: true
  name:
    description: Name of the DaemonSet.
    type: str
    required: true
  wait_timeout:
    description: Seconds to wait for the rollout to complete or stall; 0 reads once.
    type: int
    default: 120
  settle:
    description:
      - Consecutive identical reads (one per second) that make a stall, where the DaemonSet
        controller's own rule does not already say it can do nothing more.
      - That rule (Kubernetes 1.36 C(pkg/controller/daemon/update.go), rolling update without
        surge) ends the wait at the first read showing it - every desired node has its one
        Pod, none terminating, every old Pod Ready, the new Pods the scheduler refused number
        maxUnavailable (scaled from desired, rounded up) and the status agrees with the Pods.
        With maxSurge, minReadySeconds or OnDelete the settle reads decide.
    type: int
    default: 3
  wait_for:
    description:
      - C(settled) ends the wait when the rollout is complete or has stalled.
      - C(complete) waits for a complete rollout only (every Pod of the current template
        Ready), e.g. before pushing an update. It ends at once when the desired count is
        every node of the cluster (counted from one listed item and the API server's
        remainingItemCount); with fewer - a selector, or fresh nodes still carrying the
        not-ready:NoSchedule taint that DaemonSet Pods do not tolerate, so the controller
        counts them in later - the rollout must stay complete and unchanged for O(settle)
        reads (on a 500-node kwok cluster an update pushed at the first complete read
        replaced 196 Pods at once). A stall then runs into the timeout.
    type: str
    choices: [settled, complete]
    default: settled
  fail_on_timeout:
    description: Fail when neither complete nor stalled within O(wait_timeout).
    type: bool
    default: true
  dest:
    description: Write the six-line report here.
    type: path
  overwrite:
    description:
      - Replace an existing O(dest) whose content differs. The report is a recorded
        observation, so by default an existing one is kept and RV(kept_existing) says so.
      - With an existing O(dest) kept, the module does not wait either - it reads the rollout
        once (as with O(wait_timeout=0)) so RV(outcome) shows the state now.
    type: bool
    default: false
  backup:
    description: With O(overwrite), keep a timestamped copy of the old report.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Why is the toolkit rollout stuck? (any cluster)
  rollout_report:
    kubeconfig: ~/.kube/config
    namespace: gpu-operator
    name: nvidia-container-toolkit
    wait_timeout: 60
  register: rollout

- name: Record the lab's stall report
  rollout_report:
    kubeconfig: "{{ lab_kubeconfig }}"
    namespace: gpu-operator
    name: nvidia-container-toolkit
    dest: /root/gpuop/out/rollout.txt
"""

RETURN = r"""
msg:
  description: The outcome, the wait, the report in one line, and the scheduler's message.
  returned: success
  type: str
  sample: "stalled after 0.3s: DESIRED=3, UPDATED=1, READY=2, OLD_IMAGE_PODS=2, MAX_UNAVAILABLE=1, BLOCKER=insufficient-memory; scheduler: 0/3 nodes ..."
outcome:
  description:
    - C(complete), C(stalled) or C(timeout); with O(wait_timeout=0) C(complete), C(stalled) or
      C(in-progress) as the single read shows it.
  returned: success
  type: str
desired:
  description: status.desiredNumberScheduled.
  returned: success
  type: int
updated:
  description: status.updatedNumberScheduled.
  returned: success
  type: int
ready:
  description: status.numberReady.
  returned: success
  type: int
old_image_pods:
  description: Pods whose images differ from the current template.
  returned: success
  type: int
max_unavailable:
  description: spec.updateStrategy.rollingUpdate.maxUnavailable.
  returned: success
  type: raw
blocker:
  description: What stops the rollout, from the scheduler's message; C(none) when complete.
  returned: success
  type: str
  sample: insufficient-memory
blocker_message:
  description: The scheduler's own message on the blocked Pod.
  returned: when a Pod is unschedulable
  type: str
blocked_pods:
  description: Pods of the current template that cannot be scheduled.
  returned: success
  type: list
  elements: str
waited:
  description: Seconds spent waiting.
  returned: success
  type: float
report:
  description: The six-line report.
  returned: success
  type: str
kept_existing:
  description: True when O(dest) existed and was kept.
  returned: when dest exists and overwrite is false
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab.files import REPORT_ARGS, LabFileError  # noqa: E402
from ansible.module_utils.kube.client import KubeconfigError, kube_args  # noqa: E402
from ansible.module_utils.kube.rollout import RolloutError, report_rollout  # noqa: E402


def main():
    spec = kube_args(
        namespace=dict(type="str", required=True),
        name=dict(type="str", required=True),
        wait_timeout=dict(type="int", default=120),
        settle=dict(type="int", default=3),
        wait_for=dict(type="str", choices=["settled", "complete"], default="settled"),
        fail_on_timeout=dict(type="bool", default=True),
        overwrite=dict(type="bool", default=False),
        **REPORT_ARGS
    )
    spec["backup"] = dict(type="bool", default=True)  # the report is a recorded observation
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    try:
        result = report_rollout(module)
    except RolloutError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    except (LabFileError, KubeconfigError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
