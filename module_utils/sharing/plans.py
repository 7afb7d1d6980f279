# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The side-by-side sharing plan (time-slicing, MPS, MIG) for one card model: what each
strategy advertises, what a Pod that takes all memory does, what a change costs; its table.

The cards are cards.py, MIG layouts mig_layout.py, the device plugin's view device_plugin.py;
DRA's side of each plan (NVIDIA's DRA driver for GPUs, v0.4.1) dra_view.py.

MPS: the device plugin v0.20.0 pins each client's memory to NVML's total bytes / replicas
(cmd/mps-control-daemon/mps/daemon.go perDevicePinnedDeviceMemoryLimits, sent as
set_default_device_pinned_mem_limit on the control pipe: a default per CUDA client
process, not per Pod). NVML's total is the MiB nvidia-smi prints (memory_total_mib), else
the table's ``nvml_total_mib``, else the nominal size (said so in memory_source).
"""

from ansible.module_utils.lab.files import parse_mode, write_text
from ansible.module_utils.sharing import device_plugin as ts
from ansible.module_utils.sharing.cards import CARDS, PlanError, card_for
from ansible.module_utils.sharing.dra_view import check_gates, check_interval, dra_table, dra_view
from ansible.module_utils.sharing.mig_layout import check_gpus, layout_text, mig_plan
from ansible.module_utils.sharing.plugin_config import PLUGIN_VERSION

MPS_SCOPE = ("a default per CUDA client process: the MPS control daemon gets "
             "set_default_device_pinned_mem_limit for the GPU, so each process that connects "
             "is limited to it - not each Pod (a Pod with two CUDA processes may use twice)")

ALL_MEMORY = {
    "time-slicing": "nothing stops it: the slots share the whole card's memory, so the other "
                    "Pods on that GPU fail with out-of-memory (shared fate)",
    "mps": "its allocations stop at the per-process limit; the others keep their memory, but "
           "all clients share one MPS server per GPU, so a fatal fault in one can take the "
           "others down",
    "mig": "it runs out of memory inside its own instance; the other instances are untouched "
           "(separate memory, cache and compute)",
}
_CONFIG_MANAGER = (
    "config-manager (the sidecar of the device plugin%s) watches only the node label "
    "nvidia.com/device-plugin.config and acts when its value changes (re-points the config "
    "and SIGHUPs the plugin); it does not watch the ConfigMap, so an edit in place takes "
    "effect only on `kubectl rollout restart` of the device plugin DaemonSet%s, or on "
    "labelling the node with a new config name")
_TS_COST = (_CONFIG_MANAGER % ("", "") +
            ". No drain: running Pods keep their GPU; the new count is advertised after the "
            "restart")
_MPS_COST = (_CONFIG_MANAGER % (" and of the MPS control daemon",
                                " (and the MPS control daemon's)") +
             ". The new per-process limit applies to CUDA processes started after the MPS "
             "daemon restarts: restart the Pods that use the GPU")
CHANGE_COST = {
    "time-slicing": _TS_COST,
    "mps": _MPS_COST,
    "mig": "drain the GPU: a GPU is repartitioned only with no process on it (mig-parted; the "
           "GPU Operator's MIG manager acts on the node label nvidia.com/mig.config and stops "
           "the GPU clients first), then the device plugin re-advertises",
}
CHANGE_COST_SOURCE = {
    "time-slicing": "NVIDIA k8s-device-plugin v0.20.0 cmd/config-manager (label watch, SIGHUP; "
                    "v0.12.0 release notes: \"config-manager binary to run as sidecar and "
                    "update the plugin's configuration via a node label\"); GPU Operator docs, "
                    "GPU time-slicing (the ConfigMap is not watched)",
    "mps": "NVIDIA k8s-device-plugin v0.20.0 cmd/config-manager and cmd/mps-control-daemon; "
           "GPU Operator docs, GPU time-slicing / MPS",
    "mig": "NVIDIA mig-parted; GPU Operator docs, MIG manager (nvidia.com/mig.config)",
}


def _memory_total(name, spec, memory_total_mib):
    if memory_total_mib is not None:
        return memory_total_mib, ("memory_total_mib option: %d MiB (NVML memory.total as "
                                  "nvidia-smi prints it)" % memory_total_mib)
    if spec.get("nvml_total_mib"):
        return spec["nvml_total_mib"], ("table: NVML total %d MiB for %s - %s" % (
            spec["nvml_total_mib"], name, spec["nvml_total_source"]))
    return None, ("nominal %s GiB of %s: the table has no NVML total for this card, so the "
                  "limit is computed from the marketing size and may be too high; give "
                  "memory_total_mib (nvidia-smi --query-gpu=memory.total --format=csv)"
                  % (spec["memory_gib"], name))


def sharing_plan(model, gpus, timeslicing_replicas=None, mps_replicas=None, mig_devices=None,
                 mig_strategy="mixed", mig_profile_listing=None, mig_placement_listing=None,
                 memory_total_mib=None, dra_feature_gates=None, dra_timeslice_interval="Default"):
    """One plan per strategy asked, from the device plugin model; and the Markdown table. Each
    plan carries DRA's side for the same card and choice under ``dra`` (dra_view.py: NVIDIA's
    DRA driver with ``dra_feature_gates`` over its defaults, time-slicing at
    ``dra_timeslice_interval``)."""
    name, spec, note = card_for(model, mig_profile_listing, mig_placement_listing)
    check_gpus(gpus)
    if timeslicing_replicas is None and mps_replicas is None and mig_devices is None:
        raise PlanError("ask for at least one plan: timeslicing_replicas, mps_replicas or "
                        "mig_devices")
    gates = check_gates(dra_feature_gates)
    interval = check_interval(dra_timeslice_interval)
    if memory_total_mib is not None and (isinstance(memory_total_mib, bool) or
                                         not isinstance(memory_total_mib, int) or
                                         memory_total_mib < 1):
        raise PlanError("memory_total_mib must be a whole number of MiB above 0 (NVML's "
                        "memory.total as nvidia-smi prints it, e.g. 81559), got %r"
                        % (memory_total_mib,))
    plans = []
    total_mib, total_source = _memory_total(name, spec, memory_total_mib)
    vram = spec["memory_gib"] if spec["memory_gib"] is not None else \
        (total_mib / 1024.0 if total_mib else None)
    if vram is None and (timeslicing_replicas is not None or mps_replicas is not None):
        raise PlanError("%s is not in the table: give memory_total_mib for a time-slicing or "
                        "MPS plan" % name)
    for strategy, replicas in (("time-slicing", timeslicing_replicas), ("mps", mps_replicas)):
        if replicas is None:
            continue
        key = "timeSlicing" if strategy == "time-slicing" else "mps"
        config = "version: v1\nsharing:\n  %s:\n    resources:\n      - name: nvidia.com/gpu\n" \
                 "        replicas: %s\n" % (key, replicas)
        try:
            view = ts.plugin_view(config, gpus, vram,
                                  compute_capability=spec["compute_capability"],
                                  memory_total_mib=total_mib)
        except ts.SlotsError as exc:
            raise PlanError("%s_replicas=%s: %s" % (key == "mps" and "mps" or "timeslicing",
                                                    replicas, exc.message))
        plan = {
            "strategy": strategy,
            "gpu_model": name,
            "replicas": view["replicas"],
            "advertised_resources": view["advertised_resources"],
            "slots": view["advertised"],
            "guaranteed_memory_gib_per_slot": view["vram_guaranteed_per_slot_gib"],
            "mps_memory_limit_mib": view["mps_memory_limit_mib"],
            "isolation": view["isolation"],
            "fail_requests_greater_than_one": view["fail_requests_greater_than_one"],
        }
        if strategy == "mps":
            plan["memory_source"] = total_source
            plan["mps_memory_limit_scope"] = MPS_SCOPE
            plan["memory_total_mib"] = total_mib if total_mib else int(vram * 1024)
        else:
            plan["memory_source"] = ("time-slicing sets no memory limit (device plugin %s): "
                                     "nothing is guaranteed; the slots share the card's "
                                     "memory" % PLUGIN_VERSION)
        plans.append(plan)
    if mig_devices is not None:
        plans.append(mig_plan(name if spec is CARDS.get(name) else model, gpus, mig_devices,
                              mig_strategy, mig_profile_listing, mig_placement_listing))
    for plan in plans:
        plan["when_one_pod_takes_all_memory"] = ALL_MEMORY[plan["strategy"]]
        plan["change_cost"] = CHANGE_COST[plan["strategy"]]
        plan["change_cost_source"] = CHANGE_COST_SOURCE[plan["strategy"]]
        if note and "card_note" not in plan:
            plan["card_note"] = note
        plan["dra"] = dra_view(plan, model, spec, gpus, total_mib, total_source, gates, interval)
    return plans, table(name, gpus, plans, spec)


def table(name, gpus, plans, spec=None):
    spec = spec or CARDS[name]
    size = "%s GiB" % spec["memory_gib"] if spec["memory_gib"] is not None else "size not known"
    if spec.get("nvml_total_mib"):
        size += ", NVML total %d MiB" % spec["nvml_total_mib"]
    lines = [
        "GPU sharing plan: %d x %s (%s each)" % (gpus, name, size),
        "",
        "| strategy | advertised | slots | guaranteed memory per slot | isolation "
        "| one Pod takes all memory | changing the plan |",
        "|---|---|---|---|---|---|---|",
    ]
    for plan in plans:
        what = plan["strategy"]
        if what == "mig":
            what = "MIG %s (%s)" % (layout_text(plan["mig_devices"]), plan["mig_strategy"])
            memory = ", ".join("%s GiB (%s)" % (v, k.split("/", 1)[1])
                               for k, v in plan["guaranteed_memory_gib_by_resource"].items())
        else:
            what = "%s x%d" % (what, plan["replicas"])
            memory = "%s GiB" % plan["guaranteed_memory_gib_per_slot"]
            if plan["strategy"] == "mps":
                memory += " (%d MiB limit per client process)" % plan["mps_memory_limit_mib"]
        advertised = ", ".join("%s: %d" % kv for kv in plan["advertised_resources"].items())
        lines.append("| %s | %s | %d | %s | %s | %s | %s |" % (
            what, advertised, plan["slots"], memory, plan["isolation"],
            plan["when_one_pod_takes_all_memory"], plan["change_cost"]))
    lines.append("")
    for plan in plans:
        lines.append("- %s memory: %s" % (plan["strategy"], plan["memory_source"]))
    return "\n".join(lines) + "\n"


def plan_report(module):
    """gpu_sharing_plan: the plans of module.params and their Markdown table, written to dest
    (a backup kept when it changes), and DRA's side of them as a table of its own (dra_table,
    returned, not written). The module's result. Raises PlanError or LabFileError - nothing is
    written before either."""
    p = module.params
    if p["dest"]:
        parse_mode(p["mode"])
    plans, markdown = sharing_plan(p["gpu_model"], p["gpus"], p["timeslicing_replicas"],
                                   p["mps_replicas"], p["mig_devices"], p["mig_strategy"],
                                   mig_profile_listing=p["mig_profile_listing"],
                                   mig_placement_listing=p["mig_placement_listing"],
                                   memory_total_mib=p["memory_total_mib"],
                                   dra_feature_gates=p.get("dra_feature_gates"),
                                   dra_timeslice_interval=p.get("dra_timeslice_interval") or "Default")
    result = dict(changed=False, gpu_model=plans[0]["gpu_model"], plans=plans, table=markdown,
                  dra_table=dra_table(plans[0]["gpu_model"], p["gpus"], plans))
    if p["dest"]:
        result.update(write_text(module, p["dest"], markdown, mode=p["mode"], backup=True,
                                 raise_errors=True))
    return result
