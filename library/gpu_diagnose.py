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
    sees the GPU - nvidia-smi, the kernel's NVRM/Xid lines, the GPU count, Fabric Manager on
    NVSwitch systems), C(container-runtime) (the RUNNING containerd has the RuntimeClass's
    handler, or - for a Pod without one - its default runtime is NVIDIA's or CDI is on; a
    restart pending is its own finding), C(device-plugin) (a plugin Pod runs on the node,
    Ready, mounting C(/var/lib/kubelet/device-plugins), and its log shows no error),
    C(node-advertisement) (the resource in capacity and allocatable, against nvidia-smi's GPU
    count), C(scheduling) (the Pod's PodScheduled condition, with the taints, affinity,
    RuntimeClass and requests the scheduler's message names), C(workload) (phase, container
    states, restarts) - and returns each layer's status with the evidence read for it.
  - Error texts in events, container states and logs (the plugin's and the Pod's) are judged
    at the layer that causes them - e.g. the plugin's C(could not load NVML library) at the
    container runtime, C(no runtime for "nvidia" is configured) at the container runtime,
    C(Driver/library version mismatch) or C(GPU is lost) at the driver,
    C(UnexpectedAdmissionError) at the device plugin - with the text as evidence.
  - Status C(ok), C(broken), C(skipped) (could not be checked from here - the reason says why;
    never counted as ok) or C(unknown). RV(first_broken) is the lowest broken layer.
  - The node judged is the one the Pod is bound to; for a Pending Pod, each node its
    nodeSelector and required node affinity admit (when the affinity admits none, the nodes its
    nodeSelector admits), reporting the node whose path reaches furthest; or O(node).
  - Reads a live cluster (O(kubeconfig)) or a folder (O(bundle)) - a gpu_support_bundle folder
    (C(cluster/*.json), C(logs/<ns>/<pod>.log), C(nodes/<node>/...)) or what the GPU
    Operator's C(must-gather.sh) writes - with the same rules. What a folder lacks makes the
    layers it feeds C(skipped) or C(unknown).
  - Only reads. With O(dest) writes the report as Markdown, kept once written. With O(html)
    writes it as one self-contained HTML page as well - the six layers drawn top down as the
    path of a GPU Pod, each coloured by its verdict, the first broken one marked, the evidence
    with the file or command it came from (a bundle's files linked relatively to the page) and
    the node facts behind it; no network, no script, prints cleanly.
version_added: "1.0.0"
author: gpu-incident-lab contributors (@gpu-incident-lab)
extends_documentation_fragment: [lab_attributes]
options:
  kubeconfig:
    description:
      - Path of the kubeconfig of the live cluster; not used with O(bundle).
      - Understood - client certificates and CAs (files, relative to the kubeconfig, or
        C(-data)), C(insecure-skip-tls-verify), C(tls-server-name), C(token), C(tokenFile),
        basic auth, a server URL with a path prefix, and exec credential plugins.
    type: path
  context:
    description: Context in the kubeconfig; its current context when omitted.
    type: str
  bundle:
    description:
      - A support bundle folder to judge instead of a live cluster - the gpu_support_bundle
        layout or a GPU Operator must-gather folder.
      - Or its archive (C(<dest>.tar.gz), as gpu_bundle_collect writes it, or any tar archive of
        such a folder) - extracted into a private temporary folder, removed afterwards; a member
        with an absolute name, C(..) or a link is refused. O(html) then links no files.
    type: path
  namespace:
    description: Namespace of O(pod).
    type: str
  pod:
    description: The GPU Pod to diagnose, as C(NAME) (with O(namespace)) or C(NS/NAME); without it, the node O(node) is diagnosed.
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
    description:
      - Label selector of the device-plugin Pods. When omitted, any of the three labelings -
        C(name=nvidia-device-plugin-ds) (static manifest), C(app=nvidia-device-plugin-daemonset)
        (GPU Operator), C(app.kubernetes.io/name=nvidia-device-plugin) (Helm chart; its GFD and
        MPS Pods are told apart by their containers).
    type: str
  driver_label:
    description:
      - A node label that carries the driver version, read first; the others known are still
        read - C(gpu-incident-lab/driver-version), C(nvidia.com/cuda.driver-version.full),
        C(nvidia.com/cuda.driver-version.major), the deprecated C(nvidia.com/cuda.driver.major).
        A label is evidence, never proof of a driver or of its absence.
    type: str
  node_facts:
    description:
      - Per node name, what the node side found (the C(node_facts) gpu_node_facts returns) - any of
        C(driver_ok), C(driver_version), C(driver_error), C(nvidia_smi), C(gpus),
        C(runtimes_running) (alias C(runtimes_loaded)), C(runtimes_configured),
        C(restart_pending), C(default_runtime), C(default_runtime_configured), C(cdi_enabled),
        C(cdi_spec_dirs), C(cri_error), C(containerd_errors), C(kernel_xid),
        C(fabric_manager), C(device_plugin_sockets), C(device_plugin_socket), C(mig_lgip),
        C(mig_lgipp), C(runtime_binaries). With O(bundle) they are merged over the bundle's own.
    type: dict
  dest:
    description: Write the report (Markdown) here; an existing report is kept as it is.
    type: path
  html:
    description:
      - Write the report as one self-contained HTML page here (for example C(diagnosis.html)
        beside C(diagnosis.json)); replaced when this diagnosis draws it differently, so it is
        always the latest picture. Needs Jinja2 on the host the task runs on.
      - With O(bundle), the evidence links the bundle's files relatively to the page's folder.
    type: path
    version_added: "1.3.0"
attributes:
  diff_mode:
    details: Shows the report written to O(dest) and the page written to O(html).
notes:
  - Talks to the API server from the host the task runs on - usually the controller.
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
        runtimes_running: [runc]
        runtimes_configured: [runc, nvidia]
        device_plugin_sockets: [nvidia-gpu.sock]
    dest: /var/tmp/gpu-worker-3-diagnosis.md
    html: /var/tmp/gpu-worker-3-diagnosis.html

- name: The same judgment from a support bundle someone sent
  gpu_diagnose:
    bundle: /var/tmp/bundle-2026-12-01
    pod: ml/trainer-0
    html: /var/tmp/bundle-2026-12-01/diagnosis.html   # links cluster/..., nodes/... relatively
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
source:
  description: What was read - C(live), C(bundle) or C(must-gather).
  returned: success
  type: str
limits:
  description: What this kind of source cannot hold at all (a must-gather has no crictl info, no RuntimeClasses, no workload Pods).
  returned: success
  type: list
  elements: str
report:
  description: The Markdown report.
  returned: success
  type: str
html:
  description: The HTML page - C(dest) (its path) and C(changed) (whether it was written).
  returned: when O(html) is given
  type: dict
  version_added: "1.3.0"
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.bundle.archive import unpacked  # noqa: E402
from ansible.module_utils.diagnosis.diagnose import diagnose  # noqa: E402
from ansible.module_utils.lab.refusals import LabError  # noqa: E402
from ansible.module_utils.report.render import write_diagnosis_html  # noqa: E402


def main():
    spec = dict(
        kubeconfig=dict(type="path"),
        context=dict(type="str"),
        bundle=dict(type="path"),
        namespace=dict(type="str"),
        pod=dict(type="str"),
        node=dict(type="str"),
        resource=dict(type="str", default="nvidia.com/gpu"),
        device_plugin_namespace=dict(type="str"),
        device_plugin_selector=dict(type="str"),
        driver_label=dict(type="str"),
        node_facts=dict(type="dict"),
        dest=dict(type="path"),
        html=dict(type="path"),
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True,
                           required_one_of=[("pod", "node"), ("kubeconfig", "bundle")],
                           mutually_exclusive=[("kubeconfig", "bundle")])
    try:
        given = module.params["bundle"]
        with unpacked(given) as folder:   # an archive: extracted safely into a temporary folder, then removed
            module.params["bundle"] = folder
            result = diagnose(module)
        module.params["bundle"] = given
        if module.params["html"]:
            result.update(write_diagnosis_html(module, result, module.params["html"],
                                               given if folder == given else None))
    except LabError as exc:   # DiagnoseError, KubeError, KubeconfigError, ArchiveError
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
