#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: time-slicing, MPS and MIG side by side for one card model and one node - the
device plugin's view and DRA's."""

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
    M(timeslicing_slots) (replicas must be 2 or more; MPS allows at most 48 replicas; MPS
    refuses mig-strategy mixed). The MPS memory limit is the plugin's
    C(NVML total bytes / replicas) in MiB, floored - NVML's total, not the card's nominal size -
    O(memory_total_mib) when given, else the table's NVML total for the card (H100 80GB HBM3
    81559 MiB, H200 143771 MiB), else the nominal size (the plan says which in
    C(memory_source)). The plugin sends it as C(set_default_device_pinned_mem_limit) to the
    MPS control daemon - a default per CUDA client process, not per Pod.
  - A MIG layout is mig-parted's form, profile -> instances per GPU (seven C(1g.5gb) per GPU is
    C(1g.5gb) -> 7). It is checked against the card's profiles, the most instances of each,
    its compute slices, its placements and its engines (decoders, encoders, JPEG, OFA, copy
    engines - a GPU has what its full-GPU profile is given, so on an A30 C(1g.6gb+me) and
    C(2g.12gb+me) cannot coexist - one JPEG, one OFA). A layout that does not fit fails the
    module naming the profile that has no room, or the engine and the profiles that want it,
    and listing layouts that do fit.
  - The numbers come from O(mig_profile_listing) (and O(mig_placement_listing)) when given -
    the node's own C(nvidia-smi mig -lgip) / C(-lgipp) text; C(guaranteed_memory_gib_per_slot)
    is then the listing's memory, unrounded. Without them a built-in table holds, per card, the
    printed values of a real listing with its driver release and source; each plan names its
    source in C(memory_source). The same profile prints differently per driver (A100 80GB
    1g.10gb 9.50 vs 9.62), so a node's listing is the better input.
  - Changing the plan (C(change_cost), with C(change_cost_source)) - time-slicing/MPS - the
    plugin's config-manager watches only the node label C(nvidia.com/device-plugin.config);
    an edit of the ConfigMap in place takes effect on C(kubectl rollout restart) of the plugin
    DaemonSet or a label change to a new config name. MIG - the GPU must be drained.
  - Under O(mig_strategy=single) the plugin advertises MIG devices as C(nvidia.com/gpu) and
    refuses devices of more than one profile on a node; under C(mixed) each profile is
    C(nvidia.com/mig-<profile>) (C(+me) becomes C(.me)). A MIG-enabled GPU with no MIG devices
    is refused under single.
  - Known cards - A100-SXM4-40GB, A100-SXM4-80GB, A30-24GB, H100-SXM5-80GB, H100-PCIE-80GB,
    H100-NVL-94GB, H200-SXM5-141GB, GH200-96GB, GH200-144GB (1g/2g profiles only), B200-180GB.
    Each resolves from the table's name, nvidia-smi's product name (C(NVIDIA H100 80GB HBM3),
    C(NVIDIA H100 PCIe), C(NVIDIA H200), C(NVIDIA A30), C(NVIDIA A100-PCIE-40GB),
    C(NVIDIA GH200 480GB), C(NVIDIA B200)) or GFD's C(nvidia.com/gpu.product) value
    (C(NVIDIA-H100-80GB-HBM3)), any case. An unknown name is refused listing the known ones,
    unless both listings are given (then the card is planned from them). H20 is not in the
    table (no listing found); give its listings.
  - Beside each plan, C(dra) - the same card and choice under NVIDIA's DRA driver for GPUs
    (sigs.k8s.io/dra-driver-nvidia-gpu v0.4.1, the lab's lab-node-2) - what its ResourceSlice
    lists (one device of type C(gpu) per whole GPU, C(gpu-<minor>); one of type C(mig) per MIG
    device, C(gpu-<minor>-mig-<profile without dots>-<profile ID>-<start>) such as
    C(gpu-0-mig-1g5gb-19-0), no whole GPU in MIG mode; their
    attributes and capacities), the claim that gets them (DeviceClass C(gpu.nvidia.com) or
    C(mig.nvidia.com), selectors, the opaque C(GpuConfig)), how Pods share (time-slicing and MPS
    do not multiply devices - Pods share by referencing one ResourceClaim), and each difference
    from the device plugin in one line. Every rule names the driver's source file and line
    (C(sources)); docs/sharing.md lists them.
  - Time-slicing and MPS are the claim's C(GpuConfig) in DRA, behind the driver's alpha feature
    gates C(TimeSlicingSettings) and C(MPSSupport) - both off by default in v0.4.1 and on the
    lab's lab-node-2. With a gate off the claim carries no config (its Pods would never start;
    the plan says the driver's words in C(refusal)) and its Pods share the GPU time-sliced.
    O(dra_feature_gates) plans a driver deployed with other gates.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_files.mode, lab_attributes]
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
  mig_profile_listing:
    description:
      - The text of C(nvidia-smi mig -lgip) from the node, as printed (any driver, one GPU or
        many, with or without the header and border lines, trailing remarks ignored). Its
        profiles, IDs, instances, memory and engines replace the table's. A listing that
        cannot be read fails the module naming the line.
    type: str
  mig_placement_listing:
    description:
      - The text of C(nvidia-smi mig -lgipp) from the same node. Required with
        O(mig_profile_listing) for a card not in the table; otherwise the table's placements
        by profile ID are used.
    type: str
  memory_total_mib:
    description:
      - NVML's memory.total of one GPU in MiB, as
        C(nvidia-smi --query-gpu=memory.total --format=csv) prints it; the MPS limit is
        computed from it. Default - the table's NVML total for the card.
    type: int
  mig_strategy:
    description: The device plugin's mig-strategy for the MIG plan.
    type: str
    choices: [single, mixed]
    default: mixed
  dra_feature_gates:
    description:
      - The DRA driver's feature gates, as its chart's C(featureGates) sets them, over v0.4.1's
        defaults (C(TimeSlicingSettings) and C(MPSSupport) false) - e.g. C(TimeSlicingSettings)
        set to C(true). An unknown gate, a value that is not true or false, a
        combination the kubelet plugin refuses to start with, or C(DynamicMIG) (not modelled)
        fails the module naming the gate and the fix.
    type: dict
  dra_timeslice_interval:
    description: The time-slice interval of DRA's C(TimeSlicing) config (the driver's names).
    type: str
    choices: [Default, Short, Medium, Long]
    default: Default
  dest:
    description:
      - Write the Markdown table here (kept with a backup when it changes). DRA's side is
        returned as RV(dra_table), not written.
    type: path
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

- name: Plan with the node's own listing (nvidia-smi mig -lgip) and NVML total
  gpu_sharing_plan:
    gpu_model: "{{ gpu_product }}"      # e.g. the node label nvidia.com/gpu.product
    gpus: 8
    mps_replicas: 4
    memory_total_mib: 81559
    mig_devices: {"3g.40gb": 2}
    mig_profile_listing: "{{ lookup('file', 'nodes/gpu-1/mig-lgip.txt') }}"
    mig_placement_listing: "{{ lookup('file', 'nodes/gpu-1/mig-lgipp.txt') }}"

- name: The device plugin's view and DRA's for one card, DRA's time-slicing gate on
  gpu_sharing_plan:
    gpu_model: A100-SXM4-40GB
    gpus: 4
    timeslicing_replicas: 4
    mig_devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
    dra_feature_gates: {"TimeSlicingSettings": true}
    dra_timeslice_interval: Long
  register: plan
  # plan.plans[0].dra.device_count == 4 (gpu-0 .. gpu-3); plan.plans[1].dra.device_count == 16
  # plan.plans[0].dra.claim: a ResourceClaim of gpu.nvidia.com with GpuConfig TimeSlicing Long

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
    advertised_resources, slots, guaranteed_memory_gib_per_slot, memory_source, isolation,
    when_one_pod_takes_all_memory, change_cost, change_cost_source; replicas,
    mps_memory_limit_mib and fail_requests_greater_than_one for time-slicing/MPS;
    memory_total_mib and mps_memory_limit_scope for MPS; mig_devices, mig_strategy,
    placement, guaranteed_memory_gib_by_resource, memory_source_by_resource,
    engines_per_gpu and engines_used_per_gpu for MIG (listing_gpus and listing_note when
    planned from a listing; card_note for a card resolved from another name); and dra, DRA's
    side of the same plan - driver, feature_gates, device_count, devices_per_gpu,
    device_types, devices (name, attributes, capacity as the ResourceSlice carries them),
    attributes_from_the_node, capacity_source, device_class, claim (the manifest),
    claims, claim_note, pod_spec, pods_per_claim_max, pods_for_the_same_spread,
    how_pods_share, isolation, differences (one line each), sources (file and line);
    sharing_config, sharing_config_prepared and refusal (when the gate is off) for
    time-slicing/MPS; devices_by_profile, claims_by_profile, names_note and capacity_unknown
    for MIG.
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
dra_table:
  description: >-
    The device plugin's view and DRA's side by side as a Markdown table, then every
    difference, one line each.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib  # noqa: E402
from ansible.module_utils.lab.yaml_load import HAS_YAML, YAML_IMPORT_ERROR  # noqa: E402
from ansible.module_utils.sharing.plans import PlanError, plan_report  # noqa: E402
from ansible.module_utils.lab.files import LabFileError  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpu_model=dict(type="str", required=True),
            gpus=dict(type="int", required=True),
            timeslicing_replicas=dict(type="int"),
            mps_replicas=dict(type="int"),
            mig_devices=dict(type="dict"),
            mig_strategy=dict(type="str", choices=["single", "mixed"], default="mixed"),
            mig_profile_listing=dict(type="str"),
            mig_placement_listing=dict(type="str"),
            memory_total_mib=dict(type="int"),
            dra_feature_gates=dict(type="dict"),
            dra_timeslice_interval=dict(type="str", choices=["Default", "Short", "Medium", "Long"],
                                        default="Default"),
            dest=dict(type="path"),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
    try:
        result = plan_report(module)
    except (PlanError, LabFileError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
