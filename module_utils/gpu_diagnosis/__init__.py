# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layered diagnosis of a GPU Pod (gpu_diagnose) and what feeds it - a map.

Where it reads from:
  sources.py       one interface, three sources: LiveSource (API server + node facts),
                   BundleSource (a support bundle folder), MustGatherSource (the GPU Operator's
                   must-gather.sh folder); Unreadable says what a source cannot hold
  artefacts.py     what a node prints (nvidia-smi, crictl info, config dump, dmesg, ...) read
                   into node facts - the same parsers live and from a bundle
  node_facts.py    the live node side (gpu_node_facts): run the node's commands, parse them
How it judges:
  walk.py          Diagnosis: asks the source (the one place that reads), builds a Seen per
                   candidate node, calls the rules, keeps the node whose path reaches furthest
  host_layers.py   driver, container-runtime
  plugin_layers.py device-plugin, node-advertisement
  pod_layers.py    scheduling, workload
  texts.py         error texts -> the layer that causes them
  kube_objects.py  what a Pod requests, which nodes it admits, taints, the plugin's Pods
  verdict.py       LAYERS (their order, defined once) and the shape of a verdict
  report.py        the Markdown report
The modules' one call: diagnose.py (gpu_diagnose), preflight.py (gpu_preflight).
layers.py re-exports the public names (Diagnosis, LAYERS, markdown, text_findings, ...).
"""
