#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: the slot and memory table of a GPU sharing config."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: timeslicing_slots
short_description: Compute slots and guaranteed GPU memory of an NVIDIA sharing config
description:
  - Reads an NVIDIA device-plugin sharing config (as in the GPU Operator's time-slicing
    ConfigMap) and computes what users get per slot on the declared hardware.
  - Time-slicing multiplies the advertised count by C(replicas) but splits no memory; each
    slot has 0 GiB guaranteed and shares the whole card (isolation C(none)). MPS limits each
    replica to C(vram/replicas) (isolation C(memory-limit)).
  - The table to show users before time-slicing goes on - "20 slots, guaranteed memory 0".
  - With O(dest) writes the lab's seven-line C(slots.txt).
version_added: "1.0.0"
author: gpu-incident-lab contributors
options:
  src:
    description: A ConfigMap manifest file; the config is its C(data[key]).
    type: path
  key:
    description: The data key of the ConfigMap holding the config.
    type: str
    default: any
  config:
    description: The config text itself (instead of O(src)).
    type: str
  physical_gpus:
    description: Physical GPUs in the node.
    type: int
    required: true
  vram_per_gpu_gib:
    description: Memory of one GPU in GiB (A100 40GB = 40).
    type: float
    required: true
  resource:
    description: The resource whose sharing entry to read.
    type: str
    default: nvidia.com/gpu
  dest:
    description: Write the seven-line report (PHYSICAL_GPUS ... ISOLATION) here.
    type: path
  backup:
    description: Keep a timestamped copy of O(dest) when its content changes.
    type: bool
    default: false
  mode:
    description: File mode of O(dest).
    type: str
    default: "0644"
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - A C(data.any) written as a YAML mapping instead of a string is reported as the lab's
    common mistake 2, with the fix.
"""

EXAMPLES = r"""
- name: Slot table of the lab's time-slicing ConfigMap on 4 A100 40GB
  timeslicing_slots:
    src: /root/gpuop/k8s/time-slicing.yaml
    physical_gpus: 4
    vram_per_gpu_gib: 40
    dest: /root/gpuop/out/slots.txt

- name: What would MPS with 4 replicas give on an 80GB card?
  timeslicing_slots:
    config: |
      sharing:
        mps:
          resources:
            - name: nvidia.com/gpu
              replicas: 4
    physical_gpus: 8
    vram_per_gpu_gib: 80
  register: mps
"""

RETURN = r"""
strategy:
  description: C(time-slicing) or C(mps).
  returned: success
  type: str
physical_gpus:
  description: As given.
  returned: success
  type: int
replicas:
  description: Replicas of the resource's sharing entry.
  returned: success
  type: int
advertised:
  description: Slots the node advertises, physical_gpus x replicas.
  returned: success
  type: int
  sample: 20
resource_name:
  description: The advertised resource name (C(nvidia.com/gpu.shared) when renamed).
  returned: success
  type: str
vram_per_gpu_gib:
  description: As given.
  returned: success
  type: float
vram_guaranteed_per_slot_gib:
  description: Memory a slot is guaranteed (0 with time-slicing).
  returned: success
  type: float
vram_shared_per_gpu_gib:
  description: Memory the slots of one GPU share without limits (the whole card with time-slicing).
  returned: success
  type: float
isolation:
  description: C(none) (time-slicing) or C(memory-limit) (MPS).
  returned: success
  type: str
fail_requests_greater_than_one:
  description: Whether a request of more than one shared GPU is refused.
  returned: success
  type: bool
report:
  description: The seven-line report.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.lab_files import write_text  # noqa: E402
from ansible.module_utils.timeslicing import (  # noqa: E402
    SlotsError, config_from_manifest, slot_table, slots_report)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path"),
            key=dict(type="str", default="any", no_log=False),
            config=dict(type="str"),
            physical_gpus=dict(type="int", required=True),
            vram_per_gpu_gib=dict(type="float", required=True),
            resource=dict(type="str", default="nvidia.com/gpu"),
            dest=dict(type="path"),
            backup=dict(type="bool", default=False),
            mode=dict(type="str", default="0644"),
        ),
        required_one_of=[("src", "config")],
        mutually_exclusive=[("src", "config")],
        supports_check_mode=True,
    )
    p = module.params
    try:
        text = p["config"]
        if p["src"]:
            try:
                with open(p["src"], encoding="utf-8") as handle:
                    manifest = handle.read()
            except OSError as exc:
                module.fail_json(msg="cannot read %s: %s" % (p["src"], exc.strerror))
            text = config_from_manifest(manifest, p["key"], source=p["src"])
        vram = p["vram_per_gpu_gib"]
        table = slot_table(text, p["physical_gpus"], int(vram) if vram.is_integer() else vram,
                           p["resource"])
    except SlotsError as exc:
        module.fail_json(msg=exc.message, mistake=exc.mistake, line=exc.line)
    result = dict(table, changed=False, report=slots_report(table))
    if p["dest"]:
        result.update(write_text(module, p["dest"], result["report"], mode=p["mode"],
                                 backup=p["backup"]))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
