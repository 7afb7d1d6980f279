# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the NVIDIA device plugin v0.20.0 makes of a sharing config, for a node of G
identical GPUs of V GiB: does it start, which strategy is active, what the node
advertises under which names, failRequestsGreaterThanOne, the MPS limits.

Pure Python, shared by the timeslicing_slots and gpu_sharing_plan modules and the grader.
Every rule follows the plugin's source at tag v0.20.0 (github.com/NVIDIA/k8s-device-plugin,
commit 1b826acc); the file and function is named beside each rule. How the plugin reads the
config (sigs.k8s.io/yaml, Go's json errors) is plugin_config.py.
"""

import math

from ansible.module_utils.lab.files import parse_mode, read_text, write_text
from ansible.module_utils.sharing.plugin_config import (
    DEFAULT_RESOURCE, MPS_MAX_REPLICAS, MPS_MAX_REPLICAS_PRE_VOLTA, PREFIX,
    SHARED_SUFFIX, JsonError, PluginRefusal, SlotsError, config_from_manifest, is_replicated,
    parse_config, resource_name)


def plugin_view(config_text, physical_gpus, vram_per_gpu_gib, resource=DEFAULT_RESOURCE,
                mig_strategy="none", compute_capability="8.0", memory_total_mib=None):
    """What the plugin starts with and advertises on a node of ``physical_gpus`` devices that
    it exposes as ``resource`` (each ``vram_per_gpu_gib`` GiB). ``memory_total_mib`` is NVML's
    memory.total as nvidia-smi prints it (MiB); when given, the MPS limit is computed from it
    (the plugin divides NVML's total bytes, not the card's nominal size). Raises SlotsError."""
    _check_hardware(physical_gpus, vram_per_gpu_gib)
    if memory_total_mib is not None and (isinstance(memory_total_mib, bool) or
                                         not isinstance(memory_total_mib, int) or
                                         memory_total_mib < 1):
        raise SlotsError("memory_total_mib must be a whole number of MiB above 0 (NVML's "
                         "memory.total as `nvidia-smi --query-gpu=memory.total --format=csv` "
                         "prints it, e.g. 81559 for an H100 80GB HBM3), got %r"
                         % (memory_total_mib,))
    config = parse_config(config_text)
    warnings = []
    if config["resources_set"]:
        warnings.append("Customizing the 'resources' field is not yet supported in the config. "
                        "Ignoring...")
    sharing = config["sharing"]
    # main.go:356 spec.DisableResourceNamingInConfig (config.go, replicas.go disableResoureRenaming)
    for key in ("timeSlicing", "mps"):
        section = sharing[key]
        if section is None:
            continue
        renamed = devices = False
        for entry in section["resources"]:
            if not section["renameByDefault"] and entry["rename"]:
                renamed, entry["rename"] = True, ""
            if section["renameByDefault"] and entry["rename"] != entry["name"] + SHARED_SUFFIX:
                renamed, entry["rename"] = True, entry["name"] + SHARED_SUFFIX
            if entry["devices"] != "all":
                devices, entry["devices"] = True, "all"
        if renamed:
            warnings.append("Setting the 'rename' field in sharing.%s.resources is not yet "
                            "supported in the config. Ignoring..." % key)
        if devices:
            warnings.append("Customizing the 'devices' field in sharing.%s.resources is not yet "
                            "supported in the config. Ignoring..." % key)
    # sharing.go SharingStrategy / ReplicatedResources
    if is_replicated(sharing["mps"]):
        strategy = "mps"
    elif is_replicated(sharing["timeSlicing"]):
        strategy = "time-slicing"
    else:
        strategy = "none"
    active = sharing["mps"] if sharing["mps"] is not None else sharing["timeSlicing"]
    mig = config["mig_strategy"] or mig_strategy
    # main.go validateFlags
    if strategy == "mps" and mig == "mixed":
        raise PluginRefusal("using --mig-strategy=mixed is not supported with MPS",
                            chain="error starting plugins: unable to validate flags: ",
                            hint="Fix: MPS needs mig-strategy none or single")
    if mig not in ("none", "single", "mixed"):
        raise PluginRefusal("unknown MIG strategy: %s" % mig,
                            chain="error starting plugins: unable to validate flags: ")
    # internal/rm/device_map.go updateDeviceMapWithReplicas
    try:
        resource = resource_name(resource if resource is not None else DEFAULT_RESOURCE)
    except JsonError as exc:
        raise SlotsError("resource %r is not a resource name the device plugin can advertise: %s"
                         % (resource, exc.message))
    advertised = {resource: physical_gpus}
    replicas = 1
    if active is not None:
        entries = [e for e in active["resources"] if e["name"] == resource]
        if entries:
            del advertised[resource]
            for entry in entries:
                target = entry["rename"] or entry["name"]
                per_gpu = max(advertised.get(target, 0) // physical_gpus, entry["replicas"])
                advertised[target] = per_gpu * physical_gpus
            replicas = max(e["replicas"] for e in entries)
        others = sorted({e["name"] for e in active["resources"]} - {resource})
        if others:
            warnings.append("entries for %s match no device of this node (it exposes %s); they "
                            "change nothing here" % (", ".join(others), resource))
    fail = bool(active and active["failRequestsGreaterThanOne"])
    vram = vram_per_gpu_gib
    mps_limit = mps_threads = None
    if strategy == "mps" and replicas > 1:
        if resource.startswith(PREFIX + "/mig-"):
            warnings.append("MPS sharing is not supported for MIG devices; skipping daemon creation")
        ceiling = MPS_MAX_REPLICAS if _cc_at_least(compute_capability, 7, 5) else \
            MPS_MAX_REPLICAS_PRE_VOLTA
        if replicas > ceiling:
            raise PluginRefusal(
                "invalid MPS configuration: invalid device maximum allowed replicas exceeded: "
                "%d > %d" % (replicas, ceiling), chain="error getting daemons: ",
                hint="(the MPS control daemon refuses it; at most %d clients per GPU)" % ceiling)
        # cmd/mps-control-daemon/mps/daemon.go perDevicePinnedDeviceMemoryLimits
        # NVML total bytes // R // MiB == (total bytes // MiB) // R, so the MiB nvidia-smi
        # prints (floor of bytes / MiB) gives the plugin's exact number
        total_bytes = int(vram * 1024 ** 3) if memory_total_mib is None else \
            memory_total_mib * 1024 * 1024
        mps_limit = total_bytes // replicas // 1024 // 1024
        mps_threads = 100 // replicas
    if strategy == "time-slicing" and replicas > 1:
        guaranteed, shared, isolation = 0, vram, "none"
    elif strategy == "mps" and replicas > 1:
        guaranteed, shared, isolation = _num(round(mps_limit / 1024, 2)), 0, "memory-limit"
    else:
        guaranteed, shared, isolation = vram, 0, "exclusive"
    name = next((n for n in advertised if n == resource or n.startswith(resource)), resource)
    return {
        "strategy": strategy,
        "physical_gpus": physical_gpus,
        "replicas": replicas,
        "advertised": advertised.get(name, 0),
        "resource_name": name,
        "advertised_resources": advertised,
        "vram_per_gpu_gib": _num(vram),
        "vram_guaranteed_per_slot_gib": _num(guaranteed),
        "vram_shared_per_gpu_gib": _num(shared),
        "isolation": isolation,
        "fail_requests_greater_than_one": fail,
        "mps_memory_limit_mib": mps_limit,
        "mps_active_thread_percentage": mps_threads,
        "mig_strategy": mig,
        "plugin_warnings": warnings,
    }


def _cc_at_least(cc, major, minor):
    try:
        parts = [int(p) for p in str(cc).lstrip("v").split(".")[:2]]
    except ValueError:
        return True
    parts += [0] * (2 - len(parts))
    return tuple(parts) >= (major, minor)


def _check_hardware(physical_gpus, vram_per_gpu_gib):
    if isinstance(physical_gpus, bool) or not isinstance(physical_gpus, int) or physical_gpus < 1:
        raise SlotsError("physical_gpus must be a whole number of at least 1 (GPUs in the node), "
                         "got %r" % (physical_gpus,))
    if isinstance(vram_per_gpu_gib, bool) or not isinstance(vram_per_gpu_gib, (int, float)) or \
            not math.isfinite(vram_per_gpu_gib) or vram_per_gpu_gib <= 0:
        raise SlotsError("vram_per_gpu_gib must be a finite number above 0 (memory of one GPU in "
                         "GiB, e.g. 40 for an A100 40GB), got %r" % (vram_per_gpu_gib,))


def slot_table(config_text, physical_gpus, vram_per_gpu_gib, resource=DEFAULT_RESOURCE, **kwargs):
    """The slot table (plugin_view); kept under the name the grader and lab use."""
    return plugin_view(config_text, physical_gpus, vram_per_gpu_gib, resource, **kwargs)


def _num(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return round(value, 2) if isinstance(value, float) else value


SLOT_KEYS = ["PHYSICAL_GPUS", "REPLICAS", "ADVERTISED", "VRAM_PER_GPU_GIB",
             "VRAM_GUARANTEED_PER_SLOT_GIB", "VRAM_SHARED_PER_GPU_GIB", "ISOLATION"]


def slots_report(table):
    return "".join("%s=%s\n" % (key, table[key.lower()]) for key in SLOT_KEYS)


def advertised_slots(module):
    """timeslicing_slots: the slot table for the config of module.params (src's ConfigMap or
    config), written to dest as the seven-line report. The module's result. Raises SlotsError
    (the config) or LabFileError (src, dest, mode) - nothing is written before either."""
    p = module.params
    if p["dest"]:
        parse_mode(p["mode"])
    text = p["config"]
    if p["src"]:
        text = config_from_manifest(read_text(p["src"], "src"), p["key"], source=p["src"])
    vram = p["vram_per_gpu_gib"]
    table = slot_table(text, p["physical_gpus"],
                       int(vram) if math.isfinite(vram) and vram.is_integer() else vram,
                       p["resource"], compute_capability=p["compute_capability"],
                       memory_total_mib=p["memory_total_mib"])
    result = dict(table, changed=False, report=slots_report(table))
    result["msg"] = ("%s slots on %s GPUs; guaranteed memory per slot %s GiB; each GPU's %s GiB shared "
                     "by its %s slots; isolation %s." % (
                         table["advertised"], table["physical_gpus"], table["vram_guaranteed_per_slot_gib"],
                         table["vram_shared_per_gpu_gib"], table["replicas"], table["isolation"]))
    if p["dest"]:
        result.update(write_text(module, p["dest"], result["report"], mode=p["mode"],
                                 backup=p["backup"], raise_errors=True))
    return result
