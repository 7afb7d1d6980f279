# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpu_diagnose does: check the node facts given, open the source, walk, report.

:func:`diagnose` is the module's one call; the node facts a play hands in (gpu_node_facts'
results, one dict per node) are checked here against the node-facts contract before any
source is opened.
"""

from ansible.module_utils.diagnosis.bundle_source import open_bundle
from ansible.module_utils.diagnosis.markdown import markdown
from ansible.module_utils.diagnosis.sources import DiagnoseError, LiveSource
from ansible.module_utils.diagnosis.walk import Diagnosis
from ansible.module_utils.lab.files import write_text
from ansible.module_utils.kube.client import client


FACT_TYPES = {"driver_ok": bool, "driver_version": str, "driver_error": str, "nvidia_smi": str,
              "gpus": list, "runtimes_running": list, "runtimes_loaded": list,
              "runtimes_configured": list, "restart_pending": bool, "default_runtime": str,
              "default_runtime_configured": str, "cdi_enabled": bool, "cdi_spec_dirs": list,
              "cri_error": str, "containerd_errors": list, "kernel_xid": list,
              "fabric_manager": str, "device_plugin_sockets": list, "device_plugin_socket": bool,
              "mig_lgip": str, "mig_lgipp": str, "runtime_binaries": dict,
              # issue 48 item 6: the node's CDI specs and its containers' devices (node/cdi.py)
              "cdi_specs": dict, "container_devices": list}
STRING_LISTS = ("runtimes_running", "runtimes_loaded", "runtimes_configured", "cdi_spec_dirs",
                "containerd_errors", "kernel_xid", "device_plugin_sockets")
TYPE_NAMES = {bool: "boolean", str: "string", list: "list", dict: "mapping"}


def check_facts(facts):
    """None, or the message that says what is wrong with node_facts."""
    for node, entry in (facts or {}).items():
        if not isinstance(entry, dict):
            return ("node_facts[%s] must be a mapping (driver_ok, driver_version, runtimes_running, "
                    "device_plugin_sockets, ...), got %s" % (node, type(entry).__name__))
        for key, value in entry.items():
            if key not in FACT_TYPES:
                return "node_facts[%s]: unknown key %r; known: %s" % (node, key, ", ".join(FACT_TYPES))
            if value is None:
                continue
            if key == "driver_version" and isinstance(value, (int, float)) and not isinstance(value, bool):
                continue
            if not isinstance(value, FACT_TYPES[key]):
                return "node_facts[%s].%s must be a %s, got %r" % (
                    node, key, TYPE_NAMES[FACT_TYPES[key]], value)
            if key in STRING_LISTS and not all(isinstance(v, str) for v in value):
                return "node_facts[%s].%s must list strings (names or lines)" % (node, key)
            if key == "gpus" and not all(isinstance(g, dict) for g in value):
                return ("node_facts[%s].gpus must list mappings (index, name, uuid, "
                        "driver_version, memory_total_mib)" % node)
    return None


def clean_facts(facts):
    """node_facts without the None values (a key present only when it could be read)."""
    out = {}
    for node, entry in (facts or {}).items():
        out[node] = {k: (str(v) if k == "driver_version" else v)
                     for k, v in entry.items() if v is not None}
    return out


def diagnose(module):
    """gpu_diagnose's result (with the Markdown report, written to dest when given); a
    LabError (DiagnoseError, KubeError, KubeconfigError) says why not."""
    p = module.params
    if p["pod"] and "/" not in p["pod"] and not p["namespace"]:
        raise DiagnoseError("pod %s: give its namespace (namespace: NS) or write it as NS/NAME"
                            % p["pod"])
    problem = check_facts(p["node_facts"])
    if problem:
        raise DiagnoseError(problem)
    facts = clean_facts(p["node_facts"])
    if p["bundle"]:
        source = open_bundle(p["bundle"], facts)
    else:
        source = LiveSource(client(p["kubeconfig"], p["context"]), facts)
    diagnosis = Diagnosis(source, p["resource"], p["device_plugin_namespace"],
                          p["device_plugin_selector"], p["driver_label"])
    result = diagnosis.run(p["namespace"], p["pod"], p["node"])
    result["report"] = markdown(result, p["resource"])
    result["changed"] = False
    if p["dest"]:
        result.update(write_text(module, p["dest"], result["report"], force=False, raise_errors=True))
    return result
