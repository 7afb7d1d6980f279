# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot table of an NVIDIA device-plugin sharing config (time-slicing or MPS).

Pure Python (PyYAML), shared by the timeslicing_slots module and the grader.
Time-slicing rotates turns on a whole card: N replicas advertise N slots per
GPU, but no memory is reserved for any of them - each sees the whole card and
one greedy Pod can take it all. MPS splits memory: each replica is limited to
vram/replicas.
"""

import yaml

DEFAULT_RESOURCE = "nvidia.com/gpu"


class SlotsError(Exception):
    def __init__(self, message, mistake=None, line=None):
        self.message = message
        self.mistake = mistake
        self.line = line
        super().__init__(message)


def config_from_manifest(text, key="any", source="manifest"):
    """Return the config string held in a ConfigMap manifest's data[key]."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SlotsError("%s is not valid YAML%s: %s" % (
            source, " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark else "",
            getattr(exc, "problem", None) or exc), line=mark.line + 1 if mark else None)
    maps = [d for d in docs if isinstance(d, dict) and d.get("kind") == "ConfigMap"]
    if not maps:
        raise SlotsError("%s holds no ConfigMap (kinds found: %s)" % (
            source, ", ".join(str(d.get("kind")) for d in docs if isinstance(d, dict)) or "none"))
    data = maps[0].get("data") or {}
    if key not in data:
        raise SlotsError("%s: ConfigMap %s has no data.%s (keys: %s)" % (
            source, (maps[0].get("metadata") or {}).get("name"), key,
            ", ".join(sorted(data)) or "none"))
    value = data[key]
    if isinstance(value, (dict, list)):
        raise SlotsError(
            "%s: data.%s is written as a YAML %s, but ConfigMap data values must be strings "
            "(common mistake 2); the API server rejects it. Fix: make it a block string, "
            "`%s: |-` followed by the config indented below it."
            % (source, key, "mapping" if isinstance(value, dict) else "list", key),
            mistake="data-any-mapping", line=_line_of(text, key))
    if not isinstance(value, str):
        raise SlotsError("%s: data.%s must be a string, found %s" % (source, key, type(value).__name__))
    return value


def _line_of(text, key):
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip().startswith(key + ":"):
            return number
    return None


def slot_table(config_text, physical_gpus, vram_per_gpu_gib, resource=DEFAULT_RESOURCE):
    """Compute the slot table; raises SlotsError with a named problem."""
    if not isinstance(physical_gpus, int) or physical_gpus < 1:
        raise SlotsError("physical_gpus must be a whole number of at least 1, got %r" % (physical_gpus,))
    if not isinstance(vram_per_gpu_gib, (int, float)) or vram_per_gpu_gib <= 0:
        raise SlotsError("vram_per_gpu_gib must be a positive number, got %r" % (vram_per_gpu_gib,))
    try:
        config = yaml.safe_load(config_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SlotsError("the sharing config is not valid YAML%s: %s" % (
            " (line %d of the config)" % (mark.line + 1) if mark else "",
            getattr(exc, "problem", None) or exc))
    if not isinstance(config, dict) or not isinstance(config.get("sharing"), dict):
        raise SlotsError("the config has no `sharing` section; the device plugin expects "
                         "sharing.timeSlicing or sharing.mps with a resources list")
    sharing = config["sharing"]
    strategies = [name for name in ("timeSlicing", "mps") if isinstance(sharing.get(name), dict)]
    if not strategies:
        raise SlotsError("sharing has neither timeSlicing nor mps (found: %s)"
                         % (", ".join(sharing) or "nothing"))
    if len(strategies) > 1:
        raise SlotsError("sharing sets both timeSlicing and mps; the device plugin accepts one")
    strategy_key = strategies[0]
    section = sharing[strategy_key]
    resources = section.get("resources")
    if not isinstance(resources, list) or not resources:
        raise SlotsError("sharing.%s.resources must be a non-empty list of {name, replicas}"
                         % strategy_key)
    entry = next((r for r in resources if isinstance(r, dict) and r.get("name") == resource), None)
    if entry is None:
        raise SlotsError("sharing.%s.resources has no entry for %s (names: %s)" % (
            strategy_key, resource,
            ", ".join(str(r.get("name")) for r in resources if isinstance(r, dict)) or "none"))
    replicas = entry.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise SlotsError("replicas for %s must be a whole number of at least 1, got %r"
                         % (resource, replicas))
    rename = bool(section.get("renameByDefault")) or bool(entry.get("rename"))
    resource_name = entry.get("rename") or (resource + ".shared" if rename else resource)
    vram = vram_per_gpu_gib
    if strategy_key == "timeSlicing":
        guaranteed, shared, isolation, strategy = 0, vram, "none", "time-slicing"
    else:
        guaranteed, shared, isolation, strategy = vram / replicas, 0, "memory-limit", "mps"
    return {
        "strategy": strategy,
        "physical_gpus": physical_gpus,
        "replicas": replicas,
        "advertised": physical_gpus * replicas,
        "resource_name": resource_name,
        "vram_per_gpu_gib": _num(vram),
        "vram_guaranteed_per_slot_gib": _num(guaranteed),
        "vram_shared_per_gpu_gib": _num(shared),
        "isolation": isolation,
        "fail_requests_greater_than_one": bool(section.get("failRequestsGreaterThanOne", False)),
    }


def _num(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return round(value, 2) if isinstance(value, float) else value


SLOT_KEYS = ["PHYSICAL_GPUS", "REPLICAS", "ADVERTISED", "VRAM_PER_GPU_GIB",
             "VRAM_GUARANTEED_PER_SLOT_GIB", "VRAM_SHARED_PER_GPU_GIB", "ISOLATION"]


def slots_report(table):
    return "".join("%s=%s\n" % (key, table[key.lower()]) for key in SLOT_KEYS)
