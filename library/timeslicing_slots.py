#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: the slot and memory table of a GPU sharing config."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: timeslicing_slots
short_description: What the NVIDIA device plugin advertises for a sharing config (time-slicing or MPS)
description:
  - Reads an NVIDIA device-plugin sharing config (the GPU Operator's time-slicing ConfigMap, or
    the config file itself) and computes, for a node of O(physical_gpus) identical GPUs of
    O(vram_per_gpu_gib) GiB, what the device plugin v0.20.0 does with it - whether it starts,
    which strategy is active, what the node's allocatable shows under which names, and what a
    slot is guaranteed.
  - The rules are the plugin's own (github.com/NVIDIA/k8s-device-plugin, tag v0.20.0); a config
    the plugin refuses fails the module with the plugin's message, as its log prints it, so
    it can be matched against the plugin's log.
  - C(replicas) must be 2 or more (C(number of replicas must be >= 2)) - for time-slicing and
    MPS alike; a whole number (C(4.0) is 4; C("4") and C(2.5) are type errors).
  - C(rename) is dropped at startup unless C(renameByDefault) is true (the plugin warns
    "not yet supported ... Ignoring"); with C(renameByDefault) true every entry is advertised
    as C(<name>.shared), whatever C(rename) says. C(devices) is always forced to C(all).
  - Strategy - MPS when a C(mps) section is set (it wins over C(timeSlicing), which is still
    validated); else time-slicing; else C(none) (no C(sharing) section is valid and
    advertises the GPUs unshared). A name without C(nvidia.com/) gets it; entries for names
    the node does not have change nothing; two entries for one name advertise the larger
    replicas.
  - C(failRequestsGreaterThanOne) - time-slicing defaults to false, MPS to B(true) (an explicit
    false is honoured). It must be a YAML boolean - the string C("false") is a type error.
  - Time-slicing reserves no memory - every slot shares the whole card (guaranteed 0,
    isolation C(none)). MPS limits each replica to C(floor(V GiB in bytes / replicas / 1MiB))
    MiB and C(floor(100/replicas)) percent of the threads, at most 48 replicas per GPU
    (16 below compute capability 7.5) (isolation C(memory-limit)). No sharing - each Pod has a
    whole GPU (isolation C(exclusive)).
  - With O(dest) writes the lab's seven-line C(slots.txt).
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_files, lab_attributes]
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
    description: Physical GPUs in the node (1 or more).
    type: int
    required: true
  vram_per_gpu_gib:
    description: Memory of one GPU in GiB (A100 40GB = 40); a finite number above 0.
    type: float
    required: true
  resource:
    description: The name under which the node exposes these GPUs before sharing.
    type: str
    default: nvidia.com/gpu
  memory_total_mib:
    description:
      - NVML's memory.total of one GPU in MiB, as
        C(nvidia-smi --query-gpu=memory.total --format=csv) prints it (H100 80GB HBM3 81559).
        The MPS limit per replica is computed from it, as the plugin does from NVML's total
        bytes; without it, from O(vram_per_gpu_gib) (exact only where NVML's total is the
        nominal size, as on A100 40/80GB and A30).
    type: int
  compute_capability:
    description: The GPUs' CUDA compute capability; below 7.5 MPS allows 16 replicas, not 48.
    type: str
    default: "8.0"
  dest:
    description: Write the seven-line report (PHYSICAL_GPUS ... ISOLATION) here.
    type: path
notes:
  - A C(data.any) written as a YAML mapping instead of a string is reported as the lab's
    common mistake 2, with the fix.
  - Checked against the plugin's own code at tag v0.20.0 with a corpus of 50+ configs
    (tests/sharing_corpus in the project).
seealso:
  - module: gpu_sharing_plan
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
  # mps.advertised_resources == {"nvidia.com/gpu": 32}, mps.mps_memory_limit_mib == 20480,
  # mps.fail_requests_greater_than_one == true (the MPS default)

- name: A rename without renameByDefault is ignored by the plugin
  timeslicing_slots:
    config: |
      sharing:
        timeSlicing:
          resources:
            - name: nvidia.com/gpu
              rename: gpu-shared
              replicas: 5
    physical_gpus: 4
    vram_per_gpu_gib: 40
  register: slots
  # slots.advertised_resources == {"nvidia.com/gpu": 20}; slots.plugin_warnings names it
"""

RETURN = r"""
msg:
  description: What a slot gets, in one sentence.
  returned: success
  type: str
  sample: "20 slots on 4 GPUs; guaranteed memory per slot 0 GiB; each GPU's 40 GiB shared by its 5 slots; isolation none."
strategy:
  description: C(time-slicing), C(mps) or C(none), as the plugin decides it.
  returned: success
  type: str
physical_gpus:
  description: As given.
  returned: success
  type: int
replicas:
  description: Replicas applied to O(resource) (1 when it is not shared).
  returned: success
  type: int
advertised:
  description: What the node advertises for these GPUs under RV(resource_name).
  returned: success
  type: int
  sample: 20
resource_name:
  description: The name they are advertised under (C(nvidia.com/gpu.shared) with renameByDefault).
  returned: success
  type: str
advertised_resources:
  description: Resource name -> count, exactly what the node's allocatable would show for them.
  returned: success
  type: dict
  sample: {"nvidia.com/gpu": 20}
vram_per_gpu_gib:
  description: As given.
  returned: success
  type: float
vram_guaranteed_per_slot_gib:
  description: Memory a slot is guaranteed (0 with time-slicing; the MPS limit in GiB; a whole card unshared).
  returned: success
  type: float
vram_shared_per_gpu_gib:
  description: Memory the slots of one GPU share without limits (the whole card with time-slicing).
  returned: success
  type: float
isolation:
  description: C(none) (time-slicing), C(memory-limit) (MPS) or C(exclusive) (not shared).
  returned: success
  type: str
fail_requests_greater_than_one:
  description: Whether a request of more than one shared device is refused at allocation.
  returned: success
  type: bool
mps_memory_limit_mib:
  description: MPS pinned memory limit per replica in MiB (floor); null unless MPS.
  returned: success
  type: int
mps_active_thread_percentage:
  description: MPS active thread percentage per client; null unless MPS.
  returned: success
  type: int
mig_strategy:
  description: The mig-strategy the config sets (flags.migStrategy), else C(none).
  returned: success
  type: str
plugin_warnings:
  description: The warnings the plugin logs at startup for this config (ignored fields, names the node lacks).
  returned: success
  type: list
  elements: str
report:
  description: The seven-line report.
  returned: success
  type: str
plugin_message:
  description: On failure, the plugin's own innermost error message.
  returned: failure
  type: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib  # noqa: E402
from ansible.module_utils.lab.yaml_load import HAS_YAML, YAML_IMPORT_ERROR  # noqa: E402
from ansible.module_utils.sharing.device_plugin import SlotsError, advertised_slots  # noqa: E402
from ansible.module_utils.lab.files import REPORT_ARGS, LabFileError  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path"),
            key=dict(type="str", default="any", no_log=False),
            config=dict(type="str"),
            physical_gpus=dict(type="int", required=True),
            vram_per_gpu_gib=dict(type="float", required=True),
            resource=dict(type="str", default="nvidia.com/gpu"),
            compute_capability=dict(type="str", default="8.0"),
            memory_total_mib=dict(type="int"),
            **REPORT_ARGS
        ),
        required_one_of=[("src", "config")],
        mutually_exclusive=[("src", "config")],
        supports_check_mode=True,
    )
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
    try:
        result = advertised_slots(module)
    except SlotsError as exc:
        module.fail_json(msg=exc.message, mistake=exc.mistake, line=exc.line,
                         plugin_message=exc.plugin_message)
    except LabFileError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
