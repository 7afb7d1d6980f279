# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG layouts and the side-by-side sharing plan (time-slicing, MPS, MIG) for one card model.

The card table holds each GPU-instance profile's compute slices, memory, the most instances
of it a GPU can hold and its placements (start, size in memory slices), as NVIDIA's MIG user
guide lists them ("Supported MIG Profiles") and `nvidia-smi mig -lgipp` prints them. For
A100-SXM4-40GB/80GB and A30-24GB the memory sizes and placements equal the mock cards of the
github.com/NVIDIA/go-nvml module (v0.13.3-1, pkg/nvml/mock/gpus), read with go-nvlib's own
profile naming; the H100/H200 mocks there are simplified (3g placements of size 3, a 7g of
size 7, H200 memory that names a 3g.88gb), so for those two the guide's table is used and
memory is the profile's nominal size.

A layout is mig-parted's form: {profile: instances per GPU}. It fits when the instances can
be placed without overlapping memory slices and their compute slices add up to at most the
card's. What the device plugin v0.20.0 advertises for it follows internal/rm/rm.go
(AddDefaultResourcesToConfig: `mig-<profile>` with "+" -> ".", under mixed; `gpu` under
single) and internal/rm/device_map.go (assertAllMigDevicesAreValid).
"""

import itertools

from ansible.module_utils import timeslicing as ts


def _p(slices, memory_gib, max_instances, starts, size):
    return {"slices": slices, "memory_gib": memory_gib, "max_instances": max_instances,
            "placements": [(s, size) for s in starts]}


_SEVEN = range(7)
CARDS = {
    "A100-SXM4-40GB": {
        "memory_gib": 40, "compute_slices": 7, "memory_slices": 8, "compute_capability": "8.0",
        "profiles": {
            "1g.5gb": _p(1, 4.75, 7, _SEVEN, 1),
            "1g.5gb+me": _p(1, 4.75, 1, _SEVEN, 1),
            "1g.10gb": _p(1, 9.62, 4, (0, 2, 4, 6), 2),
            "2g.10gb": _p(2, 9.62, 3, (0, 2, 4), 2),
            "3g.20gb": _p(3, 19.5, 2, (0, 4), 4),
            "4g.20gb": _p(4, 19.5, 1, (0,), 4),
            "7g.40gb": _p(7, 39.25, 1, (0,), 8),
        }},
    "A100-SXM4-80GB": {
        "memory_gib": 80, "compute_slices": 7, "memory_slices": 8, "compute_capability": "8.0",
        "profiles": {
            "1g.10gb": _p(1, 9.62, 7, _SEVEN, 1),
            "1g.10gb+me": _p(1, 9.62, 1, _SEVEN, 1),
            "1g.20gb": _p(1, 19.5, 4, (0, 2, 4, 6), 2),
            "2g.20gb": _p(2, 19.5, 3, (0, 2, 4), 2),
            "3g.40gb": _p(3, 39.25, 2, (0, 4), 4),
            "4g.40gb": _p(4, 39.25, 1, (0,), 4),
            "7g.80gb": _p(7, 78.5, 1, (0,), 8),
        }},
    "H100-SXM5-80GB": {
        "memory_gib": 80, "compute_slices": 7, "memory_slices": 8, "compute_capability": "9.0",
        "profiles": {
            "1g.10gb": _p(1, 10, 7, _SEVEN, 1),
            "1g.10gb+me": _p(1, 10, 1, _SEVEN, 1),
            "1g.20gb": _p(1, 20, 4, (0, 2, 4, 6), 2),
            "2g.20gb": _p(2, 20, 3, (0, 2, 4), 2),
            "3g.40gb": _p(3, 40, 2, (0, 4), 4),
            "4g.40gb": _p(4, 40, 1, (0,), 4),
            "7g.80gb": _p(7, 80, 1, (0,), 8),
        }},
    "H200-SXM5-141GB": {
        "memory_gib": 141, "compute_slices": 7, "memory_slices": 8, "compute_capability": "9.0",
        "profiles": {
            "1g.18gb": _p(1, 18, 7, _SEVEN, 1),
            "1g.18gb+me": _p(1, 18, 1, _SEVEN, 1),
            "1g.35gb": _p(1, 35, 4, (0, 2, 4, 6), 2),
            "2g.35gb": _p(2, 35, 3, (0, 2, 4), 2),
            "3g.71gb": _p(3, 71, 2, (0, 4), 4),
            "4g.71gb": _p(4, 71, 1, (0,), 4),
            "7g.141gb": _p(7, 141, 1, (0,), 8),
        }},
    "A30-24GB": {
        "memory_gib": 24, "compute_slices": 4, "memory_slices": 4, "compute_capability": "8.0",
        "profiles": {
            "1g.6gb": _p(1, 5.7, 4, (0, 1, 2, 3), 1),
            "1g.6gb+me": _p(1, 5.7, 1, (0, 1, 2, 3), 1),
            "2g.12gb": _p(2, 11.4, 2, (0, 2), 2),
            "2g.12gb+me": _p(2, 11.4, 1, (0, 2), 2),
            "4g.24gb": _p(4, 22.8, 1, (0,), 4),
        }},
}


class PlanError(Exception):
    def __init__(self, message):
        self.message = message
        super().__init__(message)


def card(model):
    """The card entry for a model name (as listed, or nvidia-smi's "NVIDIA ..." form)."""
    if not isinstance(model, str) or not model.strip():
        raise PlanError("gpu_model is required; known cards: %s" % ", ".join(CARDS))
    wanted = model.strip()
    for prefix in ("NVIDIA ", "nvidia "):
        if wanted.startswith(prefix):
            wanted = wanted[len(prefix):]
    for name in CARDS:
        if name.lower() == wanted.lower():
            return name, CARDS[name]
    raise PlanError("unknown gpu_model %r; known cards: %s" % (model, ", ".join(CARDS)))


def _validate_layout(name, spec, layout):
    if not isinstance(layout, dict):
        raise PlanError("mig_devices must be a mapping of profile -> instances per GPU "
                        "(mig-parted's form, e.g. {\"1g.5gb\": 7}), got %r" % (layout,))
    clean = {}
    for profile, count in layout.items():
        if profile not in spec["profiles"]:
            raise PlanError("%s has no MIG profile %r; its profiles: %s"
                            % (name, profile, ", ".join(spec["profiles"])))
        if isinstance(count, str) and count.strip().isdigit():
            count = int(count)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise PlanError("mig_devices[%s] must be a whole number of instances per GPU (0 or "
                            "more), got %r" % (profile, count))
        if count:
            clean[profile] = count
    return clean


def place(spec, layout):
    """A placement {profile: [starts]} for the layout, or (None, profile-without-room)."""
    profiles = spec["profiles"]
    for profile, count in layout.items():
        if count > profiles[profile]["max_instances"]:
            return None, profile
    instances = sorted((p for p, n in layout.items() for dummy in range(n)),
                       key=lambda p: (-profiles[p]["placements"][0][1], -profiles[p]["slices"], p))
    used_compute = sum(profiles[p]["slices"] for p in instances)
    if used_compute > spec["compute_slices"]:
        return None, instances[-1]
    taken = [False] * spec["memory_slices"]
    chosen = []
    deepest = [0]

    def search(i):
        deepest[0] = max(deepest[0], i)
        if i == len(instances):
            return True
        for start, size in profiles[instances[i]]["placements"]:
            if any(taken[start:start + size]):
                continue
            for k in range(start, start + size):
                taken[k] = True
            chosen.append((instances[i], start))
            if search(i + 1):
                return True
            chosen.pop()
            for k in range(start, start + size):
                taken[k] = False
        return False

    if search(0):
        result = {}
        for profile, start in chosen:
            result.setdefault(profile, []).append(start)
        return result, None
    return None, instances[min(deepest[0], len(instances) - 1)]


def fitting_layouts(spec):
    """Every maximal layout of the card (nothing more fits), most instances first."""
    names = list(spec["profiles"])
    ranges = [range(spec["profiles"][n]["max_instances"] + 1) for n in names]
    fits = []
    for counts in itertools.product(*ranges):
        layout = {n: c for n, c in zip(names, counts) if c}
        if layout and place(spec, layout)[0] is not None:
            fits.append(layout)
    maximal = []
    for layout in fits:
        grown = False
        for n in names:
            bigger = dict(layout)
            bigger[n] = bigger.get(n, 0) + 1
            if bigger[n] <= spec["profiles"][n]["max_instances"] and place(spec, bigger)[0] is not None:
                grown = True
                break
        if not grown:
            maximal.append(layout)
    return maximal


def _closest(spec, layout, limit=5):
    def score(candidate):
        common = sum(min(candidate.get(p, 0), n) for p, n in layout.items())
        return (-common, -sum(candidate.values()))
    return sorted(fitting_layouts(spec), key=lambda c: (score(c), sorted(c.items())))[:limit]


def _fmt(layout):
    return "{%s}" % ", ".join('"%s": %d' % (p, n) for p, n in layout.items())


def mig_plan(model, gpus, layout, mig_strategy="mixed"):
    """What a node of ``gpus`` cards in MIG mode with ``layout`` advertises; PlanError if the
    layout does not fit or the device plugin refuses it."""
    name, spec = card(model)
    _check_gpus(gpus)
    if mig_strategy not in ("single", "mixed"):
        raise PlanError("mig_strategy must be single or mixed, got %r" % (mig_strategy,))
    layout = _validate_layout(name, spec, layout)
    chain = ("error starting plugins: error getting plugins: error building device map: error "
             "building device map from config.resources: invalid MIG configuration: ")
    if not layout:
        if mig_strategy == "single":
            raise PlanError(
                "the NVIDIA device plugin %s refuses a MIG-enabled GPU with no MIG devices under "
                "mig-strategy single: %sat least one device with migEnabled=true was not "
                "configured correctly: device 0 has no MIG devices configured (internal/rm/"
                "device_map.go:171). Fix: give mig_devices at least one profile, or turn MIG "
                "mode off" % (ts.PLUGIN_VERSION, chain))
        raise PlanError("mig_devices is empty: a MIG-enabled GPU with no MIG devices advertises "
                        "nothing (the device plugin only warns \"device 0 has no MIG devices "
                        "configured\" under mixed); give at least one profile")
    placement, stuck = place(spec, layout)
    if placement is None:
        raise PlanError(
            "the MIG layout %s does not fit on %s: no room for %s (%d compute and %d memory "
            "slices per GPU; %s takes %d compute slices, at most %d per GPU, placed at memory "
            "slices %s). Layouts that fit: %s" % (
                _fmt(layout), name, stuck, spec["compute_slices"], spec["memory_slices"], stuck,
                spec["profiles"][stuck]["slices"], spec["profiles"][stuck]["max_instances"],
                ", ".join(("%d-%d" % (s, s + z - 1)) if z > 1 else str(s)
                          for s, z in spec["profiles"][stuck]["placements"]),
                "; ".join(_fmt(c) for c in _closest(spec, layout))))
    if mig_strategy == "single" and len(layout) > 1:
        raise PlanError(
            "the NVIDIA device plugin %s refuses MIG devices of more than one profile on a node "
            "under mig-strategy single: %smore than one MIG device type present on node "
            "(internal/rm/device_map.go:195); layout %s. Fix: use mig-strategy mixed, or one "
            "profile per node" % (ts.PLUGIN_VERSION, chain, _fmt(layout)))
    advertised, memory = {}, {}
    for profile, count in layout.items():
        resource = "nvidia.com/gpu" if mig_strategy == "single" else \
            "nvidia.com/mig-" + profile.replace("+", ".")
        advertised[resource] = advertised.get(resource, 0) + count * gpus
        memory[resource] = spec["profiles"][profile]["memory_gib"]
    return {
        "strategy": "mig",
        "gpu_model": name,
        "mig_strategy": mig_strategy,
        "mig_devices": layout,
        "placement": placement,
        "advertised_resources": advertised,
        "slots": sum(advertised.values()),
        "guaranteed_memory_gib_per_slot": min(memory.values()),
        "guaranteed_memory_gib_by_resource": memory,
        "isolation": "hardware",
    }


def _check_gpus(gpus):
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise PlanError("gpus must be the number of GPUs in the node (1 or more), got %r" % (gpus,))


ALL_MEMORY = {
    "time-slicing": "nothing stops it: the slots share the whole card's memory, so the other "
                    "Pods on that GPU fail with out-of-memory (shared fate)",
    "mps": "its allocations stop at the per-replica limit; the others keep their memory, but "
           "all clients share one MPS server per GPU, so a fatal fault in one can take the "
           "others down",
    "mig": "it runs out of memory inside its own instance; the other instances are untouched "
           "(separate memory, cache and compute)",
}
CHANGE_COST = {
    "time-slicing": "edit the ConfigMap; the device plugin restarts and re-advertises - no drain, "
                    "running Pods keep their GPU",
    "mps": "edit the ConfigMap; the device plugin and the MPS control daemon restart with the new "
           "limits - restart the Pods that use the GPU",
    "mig": "drain the node: a GPU is repartitioned only with no process on it (mig-parted), then "
           "the device plugin re-advertises",
}


def sharing_plan(model, gpus, timeslicing_replicas=None, mps_replicas=None, mig_devices=None,
                 mig_strategy="mixed"):
    """One plan per strategy asked, from the device plugin model; and the Markdown table."""
    name, spec = card(model)
    _check_gpus(gpus)
    if timeslicing_replicas is None and mps_replicas is None and mig_devices is None:
        raise PlanError("ask for at least one plan: timeslicing_replicas, mps_replicas or "
                        "mig_devices")
    plans = []
    vram = spec["memory_gib"]
    for strategy, replicas in (("time-slicing", timeslicing_replicas), ("mps", mps_replicas)):
        if replicas is None:
            continue
        key = "timeSlicing" if strategy == "time-slicing" else "mps"
        config = "version: v1\nsharing:\n  %s:\n    resources:\n      - name: nvidia.com/gpu\n" \
                 "        replicas: %s\n" % (key, replicas)
        try:
            view = ts.plugin_view(config, gpus, vram,
                                  compute_capability=spec["compute_capability"])
        except ts.SlotsError as exc:
            raise PlanError("%s_replicas=%s: %s" % (key == "mps" and "mps" or "timeslicing",
                                                    replicas, exc.message))
        plans.append({
            "strategy": strategy,
            "gpu_model": name,
            "replicas": view["replicas"],
            "advertised_resources": view["advertised_resources"],
            "slots": view["advertised"],
            "guaranteed_memory_gib_per_slot": view["vram_guaranteed_per_slot_gib"],
            "mps_memory_limit_mib": view["mps_memory_limit_mib"],
            "isolation": view["isolation"],
            "fail_requests_greater_than_one": view["fail_requests_greater_than_one"],
        })
    if mig_devices is not None:
        plans.append(mig_plan(name, gpus, mig_devices, mig_strategy))
    for plan in plans:
        plan["when_one_pod_takes_all_memory"] = ALL_MEMORY[plan["strategy"]]
        plan["change_cost"] = CHANGE_COST[plan["strategy"]]
    return plans, table(name, gpus, plans)


def table(name, gpus, plans):
    lines = [
        "GPU sharing plan: %d x %s (%s GiB each)" % (gpus, name, CARDS[name]["memory_gib"]),
        "",
        "| strategy | advertised | slots | guaranteed memory per slot | isolation "
        "| one Pod takes all memory | changing the plan |",
        "|---|---|---|---|---|---|---|",
    ]
    for plan in plans:
        what = plan["strategy"]
        if what == "mig":
            what = "MIG %s (%s)" % (_fmt(plan["mig_devices"]), plan["mig_strategy"])
            memory = ", ".join("%s GiB (%s)" % (v, k.split("/", 1)[1])
                               for k, v in plan["guaranteed_memory_gib_by_resource"].items())
        else:
            what = "%s x%d" % (what, plan["replicas"])
            memory = "%s GiB" % plan["guaranteed_memory_gib_per_slot"]
            if plan["strategy"] == "mps":
                memory += " (%d MiB limit)" % plan["mps_memory_limit_mib"]
        advertised = ", ".join("%s: %d" % kv for kv in plan["advertised_resources"].items())
        lines.append("| %s | %s | %d | %s | %s | %s | %s |" % (
            what, advertised, plan["slots"], memory, plan["isolation"],
            plan["when_one_pod_takes_all_memory"], plan["change_cost"]))
    return "\n".join(lines) + "\n"
