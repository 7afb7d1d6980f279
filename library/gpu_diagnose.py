#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: walk the six layers of a GPU Pod (or node) and say where the path is cut."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_diagnose
short_description: Why does this GPU Pod not run - driver, runtime, device plugin, node, scheduler, workload
description:
  - Walks the layers a GPU Pod needs, bottom-up in the order of judgment - C(driver) (the host
    sees the GPU), C(container-runtime) (containerd has the RuntimeClass's handler loaded),
    C(device-plugin) (a plugin Pod runs on the node, Ready, mounting
    C(/var/lib/kubelet/device-plugins)), C(node-advertisement) (the resource in capacity and
    allocatable), C(scheduling) (the Pod's PodScheduled condition, with the taints, affinity,
    RuntimeClass and requests the scheduler's message names), C(workload) (phase, container
    states, restarts) - and returns each layer's status with the evidence read for it.
  - Status C(ok), C(broken), C(skipped) (could not be checked from here - the reason says why;
    never counted as ok) or C(unknown). RV(first_broken) is the lowest broken layer.
  - The node judged is the one the Pod is bound to; for a Pending Pod, each node its
    nodeSelector and required node affinity admit (when the affinity admits none, the nodes its
    nodeSelector admits), reporting the node whose path reaches furthest; or O(node).
  - O(node_facts) carries what a node-side role gathered over SSH (nvidia-smi, C(containerd
    config dump), the plugin socket); it decides the driver and container-runtime layers.
    Without it the driver layer reads O(driver_label) on the node and the container-runtime
    layer is C(skipped) (what containerd loaded can only be read on the node). When
    O(node_facts) and the cluster disagree, the evidence says so and the cluster decides the
    device-plugin, node-advertisement and scheduling layers.
  - Only reads the cluster. With O(dest) writes the report as Markdown, kept once written.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_kube]
options:
  namespace:
    description: Namespace of O(pod).
    type: str
  pod:
    description: The GPU Pod to diagnose; without it, the node O(node) is diagnosed.
    type: str
  node:
    description: The node to judge (default - the Pod's node, or the nodes a Pending Pod admits).
    type: str
  resource:
    description: The extended resource the GPUs are advertised as.
    type: str
    default: nvidia.com/gpu
  device_plugin_namespace:
    description: Namespace of the device-plugin Pods; all namespaces when omitted.
    type: str
  device_plugin_selector:
    description: Label selector of the device-plugin Pods.
    type: str
    default: name=nvidia-device-plugin-ds
  driver_label:
    description: The node label that carries the driver version (GPU feature discovery's).
    type: str
    default: nvidia.com/cuda.driver.major
  node_facts:
    description:
      - Per node name, what the node side found - C(driver_ok) (bool, nvidia-smi works),
        C(driver_version) (str), C(runtimes_loaded) (list of runtime names from
        C(containerd config dump)), C(device_plugin_socket) (bool, a plugin socket in
        C(/var/lib/kubelet/device-plugins)). Any key may be left out.
    type: dict
  dest:
    description: Write the report (Markdown) here; an existing report is kept as it is.
    type: path
attributes:
  check_mode:
    description: Can run in check mode and report what would change without changing it.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode) with --diff.
    support: full
"""

EXAMPLES = r"""
- name: Why is the probe Pod Pending?
  gpu_diagnose:
    kubeconfig: ~/.kube/config
    namespace: ml
    pod: gpu-capability-check
  register: diag
- name: Stop at the right layer
  ansible.builtin.debug:
    msg: "cut at {{ diag.first_broken }}: {{ (diag.layers | selectattr('layer', 'equalto', diag.first_broken) | first).next }}"
  when: diag.first_broken

- name: A node, with what the node side gathered over SSH
  gpu_diagnose:
    kubeconfig: ~/.kube/config
    node: gpu-worker-3
    node_facts:
      gpu-worker-3:
        driver_ok: true
        driver_version: "550.54.15"
        runtimes_loaded: [runc]
        device_plugin_socket: true
    dest: /var/tmp/gpu-worker-3-diagnosis.md
"""

RETURN = r"""
layers:
  description: The six layers in order - each C(layer), C(status), C(evidence) (list of {source, value}), C(next), and C(reason) when skipped or unknown.
  returned: success
  type: list
  elements: dict
first_broken:
  description: The lowest broken layer, or null.
  returned: success
  type: str
node:
  description: The node judged.
  returned: success
  type: str
candidates:
  description: The nodes considered (a Pending Pod's admitted nodes).
  returned: success
  type: list
  elements: str
report:
  description: The Markdown report.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.gpu_layers import DiagnoseError, Diagnosis, markdown  # noqa: E402
from ansible.module_utils.lab_files import write_text  # noqa: E402
from ansible.module_utils.lab_kube import KUBE_ARGS, KubeError, client  # noqa: E402

FACT_TYPES = {"driver_ok": bool, "driver_version": str, "runtimes_loaded": list,
              "device_plugin_socket": bool}


def check_facts(facts):
    """None, or the message that says what is wrong with node_facts."""
    for node, entry in (facts or {}).items():
        if not isinstance(entry, dict):
            return ("node_facts[%s] must be a mapping (driver_ok, driver_version, runtimes_loaded, "
                    "device_plugin_socket), got %s" % (node, type(entry).__name__))
        for key, value in entry.items():
            if key not in FACT_TYPES:
                return "node_facts[%s]: unknown key %r; known: %s" % (node, key, ", ".join(FACT_TYPES))
            if value is None:
                continue
            if key == "driver_version" and isinstance(value, (int, float)) and not isinstance(value, bool):
                continue
            if not isinstance(value, FACT_TYPES[key]):
                return "node_facts[%s].%s must be a %s, got %r" % (
                    node, key, {bool: "boolean", str: "string", list: "list"}[FACT_TYPES[key]], value)
            if key == "runtimes_loaded" and not all(isinstance(v, str) for v in value):
                return "node_facts[%s].runtimes_loaded must list runtime names (strings)" % node
    return None


def main():
    spec = dict(KUBE_ARGS)
    spec.update(
        namespace=dict(type="str"),
        pod=dict(type="str"),
        node=dict(type="str"),
        resource=dict(type="str", default="nvidia.com/gpu"),
        device_plugin_namespace=dict(type="str"),
        device_plugin_selector=dict(type="str", default="name=nvidia-device-plugin-ds"),
        driver_label=dict(type="str", default="nvidia.com/cuda.driver.major"),
        node_facts=dict(type="dict"),
        dest=dict(type="path"),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True,
                           required_one_of=[("pod", "node")], required_by={"pod": "namespace"})
    p = module.params
    problem = check_facts(p["node_facts"])
    if problem:
        module.fail_json(msg=problem)
    try:
        kube = client(p["kubeconfig"], p["context"])
        diagnosis = Diagnosis(kube, p["resource"], p["device_plugin_namespace"],
                              p["device_plugin_selector"], p["driver_label"], p["node_facts"])
        result = diagnosis.run(p["namespace"], p["pod"], p["node"])
    except (DiagnoseError, KubeError, RuntimeError) as exc:
        module.fail_json(msg=exc.message if isinstance(exc, DiagnoseError) else str(exc))
    result["report"] = markdown(result, p["resource"])
    result["changed"] = False
    if p["dest"]:
        result.update(write_text(module, p["dest"], result["report"], force=False))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
