# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why does this GPU Pod not run: the six layers, top-down, with evidence.

driver -> container-runtime -> device-plugin -> node-advertisement -> scheduling -> workload
(seed 003: the driver lets the host see the GPU, the toolkit lets the container see it, the
device plugin lets Kubernetes see it, and only then does the scheduler decide).

Each layer is judged on one node: the node the Pod is bound to, or - for a Pending Pod - each
node its nodeSelector and required node affinity admit, reporting the one whose path reaches
furthest. Status: ok, broken, skipped (could not be checked here, with the reason - never
counted as ok) or unknown. Evidence items say what was read (API path, bundle file or command)
and what it showed.

This module is the package's public face (what gpu_diagnose, the grader and the tests import).
Where things live: sources.py reads (one interface: a live cluster there, a support bundle in
bundle_source.py, the GPU Operator's must-gather in must_gather.py; open_bundle picks between
the two folders); artefacts.py parses what a node prints (node/gpu_facts.py gathers it live);
walk.py asks the source for everything a node's layers judge and calls the rules; the rules
are host_layers.py (driver, container runtime), plugin_layers.py (device plugin, node
advertisement) and pod_layers.py (scheduling, workload), over texts.py (error texts -> layer),
kube_objects.py (what a Pod asks and a node admits) and verdict.py (LAYERS, the verdict's
shape); markdown.py writes the Markdown. What decides each layer:

- driver: nvidia-smi on the node (node facts: driver_ok, driver_error, gpus), the kernel's
  NVRM lines (Xid 79 "fallen off the bus", "GPU is lost"), the GPU count against
  ``nvidia.com/gpu.count``, Fabric Manager on NVSwitch systems (CUDA error 802 while
  nvidia-smi works). Labels (``nvidia.com/cuda.driver-version.*``, the deprecated
  ``nvidia.com/cuda.driver.major``, the guard's ``gpu-incident-lab/driver-version``) are
  evidence only: with the NodeFeature API they outlive a dead driver, in file mode they vanish
  for a minute on each GFD restart.
- container-runtime: the RUNNING CRI config (``crictl info``: runtimes, default runtime, CDI);
  what the files would load (``containerd config dump``) only as "restart pending". A Pod with
  a RuntimeClass needs its handler; a Pod without one runs with the default runtime, and gets
  a GPU only when that runtime is NVIDIA's or CDI is on.
- device-plugin: the plugin's Pods on the node found by any of the three labelings (static
  manifest, GPU Operator, Helm chart) or the given selector, told apart from the GFD and MPS
  Pods the Helm chart labels alike, their state, the socket mount, and their log.
- node-advertisement: capacity and allocatable against nvidia-smi's GPU count; allocatable
  below capacity means GPUs marked unhealthy (Xid).
- scheduling and workload: the Pod's conditions, events, container states and log.

Error texts found in events, container states and logs are mapped to the layer that causes
them (TEXT_RULES): an error that surfaces in the workload or the plugin but is caused lower is
judged at the lower layer, with the text as evidence.
"""


# the public names, each defined once in the module named
from ansible.module_utils.node.artefacts import runtimes_from_dump  # noqa: F401
from ansible.module_utils.diagnosis.kube_objects import (  # noqa: F401
    DRIVER_LABELS, OTHER_COMPONENTS, PLUGIN_SELECTORS, SOCKET_DIR, node_admits, plugin_component,
    pod_request, scheduler_findings)
from ansible.module_utils.diagnosis.markdown import markdown  # noqa: F401
from ansible.module_utils.diagnosis.sources import (  # noqa: F401
    DiagnoseError, LiveSource, Source, Unreadable, parse_selector)
from ansible.module_utils.diagnosis.texts import TEXT_RULES, text_findings  # noqa: F401
from ansible.module_utils.diagnosis.verdict import LAYERS  # noqa: F401
from ansible.module_utils.diagnosis.walk import RULES, Diagnosis  # noqa: F401

__all__ = ["DRIVER_LABELS", "DiagnoseError", "Diagnosis", "LAYERS", "LiveSource", "OTHER_COMPONENTS",
           "PLUGIN_SELECTORS", "RULES", "SOCKET_DIR", "Source", "TEXT_RULES", "Unreadable", "markdown",
           "node_admits", "parse_selector", "plugin_component", "pod_request", "runtimes_from_dump",
           "scheduler_findings", "text_findings"]
