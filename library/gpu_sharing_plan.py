#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: time-slicing, MPS and MIG side by side for one card model and one node."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_sharing_plan
short_description: Time-slicing, MPS and a MIG layout side by side for one GPU model and node
description:
  - The conversation to have with users before a GPU is shared - for one card model and one
    node of O(gpus) cards, one row per strategy asked - what the node advertises, how many
    slots, the memory each slot is guaranteed, the isolation, what happens to the others when
    one Pod takes all memory, and what a change of the plan costs.
  - Time-slicing and MPS are computed by the same device-plugin v0.20.0 model as
    M(timeslicing_slots) (replicas must be 2 or more; MPS limits memory per replica to
    C(floor(card MiB / replicas)) and allows at most 48 replicas; MPS refuses
    mig-strategy mixed).
  - A MIG layout is mig-parted's form, profile -> instances per GPU (seven C(1g.5gb) per GPU is
    C(1g.5gb) -> 7). It is
    checked against the card's profiles, the most instances of each, its compute slices and
    its placements (NVIDIA's MIG user guide, "Supported MIG Profiles"; A100 and A30 also
    against the go-nvml mock cards). A layout that does not fit fails the module naming the
    profile that has no room and listing layouts that do fit.
  - Under O(mig_strategy=single) the plugin advertises MIG devices as C(nvidia.com/gpu) and
    refuses devices of more than one profile on a node; under C(mixed) each profile is
    C(nvidia.com/mig-<profile>) (C(+me) becomes C(.me)). A MIG-enabled GPU with no MIG devices
    is refused under single.
  - Known cards - A100-SXM4-40GB, A100-SXM4-80GB, H100-SXM5-80GB, H200-SXM5-141GB, A30-24GB
    (also with nvidia-smi's C(NVIDIA ) prefix, any case).
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
options:
  gpu_model:
    description: The card model.
    type: str
    required: true
  gpus:
    description: GPUs of that model in the node.
    type: int
    required: true
  timeslicing_replicas:
    description: Plan time-slicing with this many replicas per GPU.
    type: int
  mps_replicas:
    description: Plan MPS with this many replicas per GPU.
    type: int
  mig_devices:
    description: Plan this MIG layout, profile -> instances per GPU (the same on every GPU).
    type: dict
  mig_strategy:
    description: The device plugin's mig-strategy for the MIG plan.
    type: str
    choices: [single, mixed]
    default: mixed
  dest:
    description: Write the Markdown table here (kept with a backup when it changes).
    type: path
  mode:
    description: File mode of O(dest).
    type: str
    default: "0644"
attributes:
  check_mode:
    description: Can run in check mode and report what would change without changing it.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
    support: full
seealso:
  - module: timeslicing_slots
"""

EXAMPLES = r"""
- name: The three ways to share four A100 40GB
  gpu_sharing_plan:
    gpu_model: A100-SXM4-40GB
    gpus: 4
    timeslicing_replicas: 5
    mps_replicas: 4
    mig_devices: {"1g.5gb": 7}
    dest: /tmp/sharing-plan.md
  register: plan
  # plan.plans[2].advertised_resources == {"nvidia.com/mig-1g.5gb": 28}

- name: A mixed MIG layout on H100, advertised under mig-strategy single - refused
  gpu_sharing_plan:
    gpu_model: H100-SXM5-80GB
    gpus: 8
    mig_devices: {"3g.40gb": 1, "2g.20gb": 2}
    mig_strategy: single
  ignore_errors: true
"""

RETURN = r"""
plans:
  description: >-
    One entry per strategy asked (time-slicing, mps, mig in that order) - strategy,
    advertised_resources, slots, guaranteed_memory_gib_per_slot, isolation,
    when_one_pod_takes_all_memory, change_cost; replicas, mps_memory_limit_mib and
    fail_requests_greater_than_one for time-slicing/MPS; mig_devices, mig_strategy, placement
    and guaranteed_memory_gib_by_resource for MIG.
  returned: success
  type: list
  elements: dict
table:
  description: The same as a Markdown table.
  returned: success
  type: str
gpu_model:
  description: The card model as the table knows it.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib  # noqa: E402
from ansible.module_utils.gpu_sharing import PlanError, card, sharing_plan  # noqa: E402
from ansible.module_utils.timeslicing import HAS_YAML, YAML_IMPORT_ERROR  # noqa: E402
from ansible.module_utils.lab_files import parse_mode, write_text  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpu_model=dict(type="str", required=True),
            gpus=dict(type="int", required=True),
            timeslicing_replicas=dict(type="int"),
            mps_replicas=dict(type="int"),
            mig_devices=dict(type="dict"),
            mig_strategy=dict(type="str", choices=["single", "mixed"], default="mixed"),
            dest=dict(type="path"),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
    p = module.params
    if p["dest"]:
        parse_mode(module, p["mode"])
    try:
        name, _spec = card(p["gpu_model"])
        plans, table = sharing_plan(name, p["gpus"], p["timeslicing_replicas"], p["mps_replicas"],
                                    p["mig_devices"], p["mig_strategy"])
    except PlanError as exc:
        module.fail_json(msg=exc.message)
    result = dict(changed=False, gpu_model=name, plans=plans, table=table)
    if p["dest"]:
        result.update(write_text(module, p["dest"], table, mode=p["mode"], backup=True))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
